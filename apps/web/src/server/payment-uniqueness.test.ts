import { randomUUID } from 'node:crypto';
import type { AppRouter } from '@once/api';
import type { TestDatabase } from '@once/db/testing';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServedHandler } from './testing/serve-fetch.ts';
import { startWebTestServer, type WebTestServer } from './testing/web-test-server.ts';

/**
 * A payment is unique per (tenant, checkout Idempotency-Key) for ever, across tRPC
 * `checkout.pay` and REST `POST /api/v1/payments`, whatever happened to the key's own row
 * (expired, reaped): the payments table decides, not the key store.
 */
describe('one payment per (tenant, idempotency key), across transports and key expiry', () => {
  let database: TestDatabase;
  let server: ServedHandler;
  let web: WebTestServer | undefined;

  beforeAll(async () => {
    web = await startWebTestServer('web_uniqueness', {
      SESSION_SECRET: 'uniqueness-test-session-secret-0123',
    });
    ({ database, server } = web);
  });
  afterAll(async () => {
    await web?.close();
  });

  const auth = { authorization: 'Bearer once_test_tenant_a' };
  const cart = { lines: [{ productId: 'book_sre', quantity: 1 }] };
  const otherCart = { lines: [{ productId: 'book_sre', quantity: 2 }] };

  function trpc(key: string) {
    const seen: Headers[] = [];
    const client = createTRPCClient<AppRouter>({
      links: [
        httpLink({
          url: `${server.url}/api/trpc`,
          headers: () => ({ ...auth, 'idempotency-key': key }),
          fetch: async (input, init) => {
            const response = await fetch(input, init);
            seen.push(response.headers);
            return response;
          },
        }),
      ],
    });
    return { pay: (input: typeof cart) => client.checkout.pay.mutate(input), seen };
  }

  const rest = (key: string, body: unknown) =>
    fetch(`${server.url}/api/v1/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth, 'idempotency-key': key },
      body: JSON.stringify(body),
    });

  async function rows(key: string) {
    const [row] = await database.client.sql<{ payments: number; jobs: number }[]>`
      select (select count(*)::int from payments where idempotency_key = ${key}) as payments,
             (select count(*)::int from outbox_jobs j join payments p
                on p.tenant_id = j.tenant_id and p.id = j.payment_id
              where p.idempotency_key = ${key}) as jobs`;
    return row!;
  }

  /** What the TTL passing does to a key row, without waiting for it. */
  const expireKey = (key: string) =>
    database.client.sql`
      update idempotency_keys set expires_at = now() - interval '1 second' where key = ${key}`;
  /** What the reaper does to an expired key row. */
  const reapKey = (key: string) =>
    database.client.sql`delete from idempotency_keys where key = ${key}`;

  it('tRPC retry after the key expired answers the same payment; one payment row', async () => {
    const key = randomUUID();
    const first = await trpc(key).pay(cart);
    await expireKey(key);
    const retry = trpc(key);
    const again = await retry.pay(cart);
    expect(again.paymentId).toBe(first.paymentId);
    expect(retry.seen[0]!.get('idempotent-replayed')).toBe('true');
    expect(await rows(key)).toEqual({ payments: 1, jobs: 1 });
  });

  it('REST retry after the reaper removed the key answers the same payment; one payment row', async () => {
    const key = randomUUID();
    const first = await rest(key, cart);
    expect(first.status).toBe(201);
    const created = await first.json();
    await reapKey(key);
    const again = await rest(key, cart);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('location')).toBe(`/api/v1/payments/${created.paymentId}`);
    expect((await again.json()).paymentId).toBe(created.paymentId);
    expect(await rows(key)).toEqual({ payments: 1, jobs: 1 });
    // The retry's key is completed with the existing payment: the next retry is a plain replay.
    const third = await rest(key, cart);
    expect((await third.json()).paymentId).toBe(created.paymentId);
    expect(await rows(key)).toEqual({ payments: 1, jobs: 1 });
  });

  it('the retry answers the payment in its current state, not a stale copy', async () => {
    const key = randomUUID();
    const first = await trpc(key).pay(cart);
    await database.client.sql`
      update payments set status = 'succeeded' where id = ${first.paymentId}`;
    await reapKey(key);
    const again = await trpc(key).pay(cart);
    expect(again).toMatchObject({ paymentId: first.paymentId, status: 'succeeded' });
  });

  it('the same key over tRPC then REST is one payment', async () => {
    const key = randomUUID();
    const viaTrpc = await trpc(key).pay(cart);
    const viaRest = await rest(key, cart);
    expect(viaRest.status).toBe(200);
    expect((await viaRest.json()).paymentId).toBe(viaTrpc.paymentId);
    expect(await rows(key)).toEqual({ payments: 1, jobs: 1 });
  });

  it('the same key over REST then tRPC is one payment', async () => {
    const key = randomUUID();
    const viaRest = await (await rest(key, cart)).json();
    const viaTrpc = await trpc(key).pay(cart);
    expect(viaTrpc.paymentId).toBe(viaRest.paymentId);
    expect(await rows(key)).toEqual({ payments: 1, jobs: 1 });
  });

  it('same key, another cart after the key expired: 422 idempotency_key_reused on both transports, nothing written', async () => {
    const key = randomUUID();
    const first = await trpc(key).pay(cart);
    await expireKey(key);
    const [before] = await database.client.sql`
      select count(*)::int as n from idempotency_keys where key = ${key}`;

    const refused = await trpc(key)
      .pay(otherCart)
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TRPCClientError);
    expect((refused as TRPCClientError<AppRouter>).data).toMatchObject({
      code: 'idempotency_key_reused',
      httpStatus: 422,
      trpcCode: 'UNPROCESSABLE_CONTENT',
    });

    const viaRest = await rest(key, otherCart);
    expect(viaRest.status).toBe(422);
    expect(viaRest.headers.get('content-type')).toBe('application/problem+json');
    expect(await viaRest.json()).toMatchObject({ code: 'idempotency_key_reused', status: 422 });

    expect(await rows(key)).toEqual({ payments: 1, jobs: 1 });
    const [payment] = await database.client.sql`
      select amount from payments where id = ${first.paymentId}`;
    expect(payment!.amount).toBe(first.amount);
    const [after] = await database.client.sql`
      select count(*)::int as n from idempotency_keys where key = ${key}`;
    expect(after!.n).toBe(before!.n);
  });

  it('the same cart written differently (key order, optional fields) is the same payment across transports', async () => {
    const key = randomUUID();
    const viaTrpc = await trpc(key).pay({
      lines: [{ productId: 'bookmark', quantity: 1 }],
    } as typeof cart);
    const viaRest = await fetch(`${server.url}/api/v1/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth, 'idempotency-key': key },
      body: '{ "lines": [ { "quantity": 1.0, "productId": "bookmark" } ] }',
    });
    expect((await viaRest.json()).paymentId).toBe(viaTrpc.paymentId);
  });

  it('concurrent tRPC and REST requests with one key make exactly one payment', async () => {
    for (let round = 0; round < 5; round++) {
      const key = randomUUID();
      const answers = await Promise.allSettled([
        ...Array.from({ length: 5 }, () => trpc(key).pay(cart)),
        ...Array.from({ length: 5 }, async () => {
          const response = await rest(key, cart);
          // The body (a 500's stack, from the test server) rides along for the failure message.
          if (response.status >= 300)
            throw new Error(`REST ${response.status}`, { cause: await response.text() });
          return (await response.json()) as { paymentId: string };
        }),
      ]);
      const ids = new Set(
        answers
          .filter((a) => a.status === 'fulfilled')
          .map((a) => (a as PromiseFulfilledResult<{ paymentId: string }>).value.paymentId),
      );
      for (const a of answers) {
        // Only "come back later" (409 past lock_timeout) may refuse; never a second payment.
        if (a.status === 'rejected')
          expect(String(a.reason), String((a.reason as Error).cause ?? '')).toMatch(
            /409|in use|in_use/i,
          );
      }
      expect(ids.size).toBe(1);
      expect(await rows(key)).toEqual({ payments: 1, jobs: 1 });
    }
  });
});
