import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExampleRouter, startExampleApp } from '../../examples/trpc-drizzle-app.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

let t: IdempotencyTestDatabase;
let app: Awaited<ReturnType<typeof startExampleApp>>;
beforeAll(async () => {
  // An empty database: the example app creates its own tables from the public DDL export.
  t = await createIdempotencyTestDatabase('consumer');
  await t.sql`drop table idempotency_keys, idempotency_rate_limits, idempotency_key_audit`;
  app = await startExampleApp(t.url);
});
afterAll(async () => {
  await app?.close();
  await t?.drop();
});

function clientFor(tenant: string, key: () => string | undefined, seen: Headers[]) {
  return createTRPCClient<ExampleRouter>({
    links: [
      httpLink({
        url: app.url,
        headers: () => {
          const k = key();
          return { authorization: `Bearer ${tenant}`, ...(k ? { 'idempotency-key': k } : {}) };
        },
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          seen.push(response.headers);
          return response;
        },
      }),
    ],
  });
}

describe('consumer app over real HTTP (public exports only)', () => {
  it('a retried mutation is replayed, not re-run; reuse is 422; other tenants are isolated; missing key is 400', async () => {
    let key: string | undefined = 'order-intent-1';
    const seen: Headers[] = [];
    const client = clientFor('acme', () => key, seen);
    const first = await client.placeOrder.mutate({ sku: 'book', quantity: 2 });
    const retry = await client.placeOrder.mutate({ quantity: 2, sku: 'book' });
    expect(retry).toEqual(first);
    expect(seen[0]?.get('idempotent-replayed')).toBeNull();
    expect(seen[1]?.get('idempotent-replayed')).toBe('true');
    expect(
      await app.sql`select count(*)::int as n from example_orders where tenant_id = 'acme'`,
    ).toEqual([{ n: 1 }]);

    const reused = await client.placeOrder
      .mutate({ sku: 'book', quantity: 3 })
      .catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(TRPCClientError);
    const data = (reused as TRPCClientError<ExampleRouter>).data as {
      httpStatus: number;
      idempotency: { code: string };
    };
    expect(data.httpStatus).toBe(422);
    expect(data.idempotency.code).toBe('idempotency_key_reused');

    const other = await clientFor('globex', () => key, []).placeOrder.mutate({
      sku: 'book',
      quantity: 2,
    });
    expect(other.orderId).not.toBe(first.orderId);

    key = undefined;
    const missing = await client.placeOrder
      .mutate({ sku: 'book', quantity: 1 })
      .catch((e: unknown) => e);
    expect(
      ((missing as TRPCClientError<ExampleRouter>).data as { idempotency: { code: string } })
        .idempotency.code,
    ).toBe('idempotency_key_missing');
  });

  it('concurrent double-submits with one key create one order', async () => {
    const client = clientFor('initech', () => 'double-click', []);
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => client.placeOrder.mutate({ sku: 'pen', quantity: 1 })),
    );
    const fulfilled = results.filter((r) => r.status === 'fulfilled');
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(fulfilled.length).toBeGreaterThanOrEqual(1);
    for (const r of rejected) {
      expect(
        ((r.reason as TRPCClientError<ExampleRouter>).data as { idempotency: { code: string } })
          .idempotency.code,
      ).toBe('idempotency_key_in_use');
    }
    expect(
      await app.sql`select count(*)::int as n from example_orders where tenant_id = 'initech'`,
    ).toEqual([{ n: 1 }]);
  });
});
