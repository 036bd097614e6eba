import { randomUUID } from 'node:crypto';
import { createDatabaseClient } from '@once/db';
import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_CHECKOUT_KEY_TTL_MS, readApiEnv } from '../../api-env.ts';
import { checkoutFingerprint } from '../../checkout/checkout-fingerprint.ts';
import { createContext } from '../../context.ts';
import { createApiDependencies } from '../../dependencies.ts';
import { createCaller } from '../../root.ts';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
  TEST_SESSION_SECRET,
} from '../../testing/api-test-harness.ts';

const cart = { lines: [{ productId: 'book_ddia', quantity: 1 }] };

describe('checkout.pay with a shortened ONCE_CHECKOUT_KEY_TTL_MS', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    // 1 ms: every retry below comes after the key expired, as a retry a day later would.
    h = await createApiTestHarness('api_pay_ttl', { env: { ONCE_CHECKOUT_KEY_TTL_MS: '1' } });
  });
  afterAll(async () => {
    await h.drop();
  });
  beforeEach(async () => {
    await h.database.client.sql`truncate payments, outbox_jobs, idempotency_keys`;
  });

  const pay = (key: string, input: unknown = cart) =>
    h.caller({ ...bearer('tenant_a'), 'idempotency-key': key }).api.checkout.pay(input as never);

  it('keeps the key for the configured time', async () => {
    const key = randomUUID();
    await pay(key);
    const [row] = await h.database.client.sql<{ ms: number }[]>`
      select extract(epoch from (expires_at - completed_at)) * 1000 as ms
      from idempotency_keys where key = ${key}`;
    expect(Number(row!.ms)).toBeCloseTo(1, 0);
  });

  it('a retry after the key expired answers the same payment: one payment, one job', async () => {
    const key = randomUUID();
    const first = await pay(key);
    const again = await pay(key);
    const third = await pay(key);
    expect(again.paymentId).toBe(first.paymentId);
    expect(third.paymentId).toBe(first.paymentId);
    const [row] = await h.database.client.sql<{ payments: number; jobs: number }[]>`
      select (select count(*)::int from payments) as payments,
             (select count(*)::int from outbox_jobs) as jobs`;
    expect(row).toEqual({ payments: 1, jobs: 1 });
  });

  it('stores the fingerprint of the normalised input on the payment', async () => {
    const key = randomUUID();
    const paid = await pay(key, { lines: [{ quantity: 1, productId: 'book_ddia', extra: 1 }] });
    const [row] = await h.database.client.sql`
      select request_fingerprint from payments where id = ${paid.paymentId}`;
    expect(row!.request_fingerprint).toBe(checkoutFingerprint(cart));
  });

  it('a payment without a stored fingerprint (written before it existed) is never matched: 422', async () => {
    const key = randomUUID();
    const first = await pay(key);
    await h.database.client.sql`
      update payments set request_fingerprint = null where id = ${first.paymentId}`;
    const refused = await pay(key).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TRPCError);
    expect((refused as TRPCError).code).toBe('UNPROCESSABLE_CONTENT');
    expect(((refused as TRPCError).cause as { code?: string }).code).toBe('idempotency_key_reused');
  });

  it('concurrent first attempts with one key make one payment', async () => {
    const key = randomUUID();
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => pay(key)));
    const ids = new Set(
      results
        .filter((r) => r.status === 'fulfilled')
        .map((r) => (r as PromiseFulfilledResult<{ paymentId: string }>).value.paymentId),
    );
    expect(ids.size).toBe(1);
    const [row] = await h.database.client.sql`select count(*)::int as n from payments`;
    expect(row!.n).toBe(1);
  });

  it('a retry that waits past lock_timeout on a concurrent first attempt is told to come back (409), not failed', async () => {
    const key = randomUUID();
    // The first attempt: its payment row is inserted and its transaction is still open.
    const holder = await h.database.client.sql.reserve();
    try {
      await holder`begin`;
      await holder`
        insert into payments (tenant_id, id, status, amount, currency, lines, idempotency_key,
          request_fingerprint, downstream_key)
        values ('tenant_a', 'pay_held', 'processing', 100, 'usd', '[]'::jsonb, ${key},
          ${checkoutFingerprint(cart)}, 'once_pay_pay_held')`;
      const impatient = createDatabaseClient(h.database.url, {
        applicationName: 'test-impatient',
        lockTimeoutMs: 200,
      });
      try {
        const deps = createApiDependencies({
          db: impatient.db,
          sessionSecret: TEST_SESSION_SECRET,
        });
        const req = new Request('http://localhost/api/trpc', {
          headers: { ...bearer('tenant_a'), 'idempotency-key': key },
        });
        const resHeaders = new Headers();
        const api = createCaller(createContext({ req, resHeaders, ...deps }));
        const refused = await api.checkout.pay(cart).catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(TRPCError);
        expect((refused as TRPCError).code).toBe('CONFLICT');
        expect(((refused as TRPCError).cause as { code?: string }).code).toBe(
          'idempotency_key_in_use',
        );
        expect(resHeaders.get('retry-after')).toBe('1');
      } finally {
        await impatient.close();
      }
    } finally {
      await holder`rollback`;
      holder.release();
    }
    const [row] = await h.database.client.sql`select count(*)::int as n from payments`;
    expect(row!.n).toBe(0);
  });
});

describe('readApiEnv: ONCE_CHECKOUT_KEY_TTL_MS', () => {
  it('defaults to 24 h; a whole number of ms >= 1 is taken; anything else refuses to start', () => {
    expect(readApiEnv({}).checkoutKeyTtlMs).toBe(DEFAULT_CHECKOUT_KEY_TTL_MS);
    expect(DEFAULT_CHECKOUT_KEY_TTL_MS).toBe(86_400_000);
    expect(readApiEnv({ ONCE_CHECKOUT_KEY_TTL_MS: '60000' }).checkoutKeyTtlMs).toBe(60_000);
    for (const bad of ['0', '-1', '1.5', '24h', '99999999999999999999']) {
      expect(() => readApiEnv({ ONCE_CHECKOUT_KEY_TTL_MS: bad })).toThrow(
        /ONCE_CHECKOUT_KEY_TTL_MS must be a whole number of milliseconds >= 1/,
      );
    }
  });
});
