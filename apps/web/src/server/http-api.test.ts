import { randomBytes, randomUUID } from 'node:crypto';
import type { AppRouter } from '@once/api';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebRuntime } from './runtime.ts';
import { type ServedHandler, serveFetch } from './testing/serve-fetch.ts';
import { webApiRoutes } from './testing/web-routes.ts';
import { startWebTestServer, type WebTestServer } from './testing/web-test-server.ts';

const WEBHOOK_SECRET = 'whsec_test_http';

describe('web API over real HTTP', () => {
  let database: TestDatabase;
  let server: ServedHandler;
  let web: WebTestServer | undefined;

  beforeAll(async () => {
    web = await startWebTestServer('web_http', {
      SESSION_SECRET: 'http-test-session-secret-0123',
      PROCESSOR_WEBHOOK_SECRET: WEBHOOK_SECRET,
      ONCE_ANSWER_KEY: randomBytes(32).toString('hex'),
    });
    ({ database, server } = web);
  });
  afterAll(async () => {
    await web?.close();
  });

  const countPayments = async (key: string) => {
    const [row] = await database.client.sql<{ n: number }[]>`
      select count(*)::int as n from payments where idempotency_key = ${key}`;
    return row!.n;
  };

  /** A tRPC client like the browser's: non-batched httpLink, headers per call, response headers captured. */
  function trpcClient(headers: Record<string, string>) {
    const seen: { status: number; headers: Headers }[] = [];
    const client = createTRPCClient<AppRouter>({
      links: [
        httpLink({
          url: `${server.url}/api/trpc`,
          headers: () => headers,
          fetch: async (input, init) => {
            const response = await fetch(input, init);
            seen.push({ status: response.status, headers: response.headers });
            return response;
          },
        }),
      ],
    });
    return { client, seen };
  }

  describe('tRPC checkout.pay', () => {
    const auth = { authorization: 'Bearer once_test_tenant_a' };
    const cart = { lines: [{ productId: 'book_sre', quantity: 1 }] };

    it('same key twice: one payment, the second answer carries Idempotent-Replayed: true', async () => {
      const key = randomUUID();
      const first = trpcClient({ ...auth, 'idempotency-key': key });
      const second = trpcClient({ ...auth, 'idempotency-key': key });
      const a = await first.client.checkout.pay.mutate(cart);
      const b = await second.client.checkout.pay.mutate(cart);
      expect(b).toEqual(a);
      expect(first.seen[0]!.headers.get('idempotent-replayed')).toBeNull();
      expect(second.seen[0]!.headers.get('idempotent-replayed')).toBe('true');
      expect(await countPayments(key)).toBe(1);
      // ONCE_ANSWER_KEY: the stored answer is sealed (its key's id, no JSON), replayed in clear.
      const [stored] = await database.client.sql<{ keyId: string; body: string }[]>`
        select response_key_id as "keyId", response_body as body from idempotency_keys where key = ${key}`;
      expect(stored!.keyId).toMatch(/^[0-9a-f]{8}$/);
      expect(stored!.body).not.toContain(String(a.paymentId));
    });

    it('same key, other cart: 422 UNPROCESSABLE_CONTENT, idempotency_key_reused', async () => {
      const key = randomUUID();
      await trpcClient({ ...auth, 'idempotency-key': key }).client.checkout.pay.mutate(cart);
      const other = trpcClient({ ...auth, 'idempotency-key': key });
      const error = await other.client.checkout.pay
        .mutate({ lines: [{ productId: 'book_sre', quantity: 2 }] })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TRPCClientError);
      const data = (error as TRPCClientError<AppRouter>).data!;
      expect(data).toMatchObject({
        code: 'idempotency_key_reused',
        trpcCode: 'UNPROCESSABLE_CONTENT',
        httpStatus: 422,
        idempotency: { code: 'idempotency_key_reused' },
      });
      expect(other.seen[0]!.status).toBe(422);
      expect(await countPayments(key)).toBe(1);
    });

    it('missing key: 400 idempotency_key_missing; bad input: 400 with a domain code', async () => {
      const noKey = trpcClient(auth);
      const missing = await noKey.client.checkout.pay.mutate(cart).catch((e: unknown) => e);
      expect((missing as TRPCClientError<AppRouter>).data).toMatchObject({
        code: 'idempotency_key_missing',
        httpStatus: 400,
      });
      const bad = await trpcClient({ ...auth, 'idempotency-key': randomUUID() })
        .client.checkout.pay.mutate({ lines: [{ productId: 'ghost', quantity: 1 }] })
        .catch((e: unknown) => e);
      expect((bad as TRPCClientError<AppRouter>).data).toMatchObject({
        code: 'unknown_product',
        httpStatus: 400,
        details: { productId: 'ghost' },
      });
    });

    it('30 concurrent requests with one key make exactly one payment', async () => {
      const key = randomUUID();
      const results = await Promise.allSettled(
        Array.from({ length: 30 }, () =>
          trpcClient({ ...auth, 'idempotency-key': key }).client.checkout.pay.mutate(cart),
        ),
      );
      const ok = results.filter((r) => r.status === 'fulfilled');
      console.log(`tRPC 30x same key: ${ok.length} ok, ${results.length - ok.length} refused`);
      const refused = results.filter((r) => r.status === 'rejected');
      expect(ok.length).toBeGreaterThanOrEqual(1);
      for (const r of refused) {
        // Atomic mode: duplicates wait for the first transaction and get its result (fulfilled,
        // same payment). Only a wait past lock_timeout is told to come back: 409 in use.
        expect(((r as PromiseRejectedResult).reason as TRPCClientError<AppRouter>).data?.code).toBe(
          'idempotency_key_in_use',
        );
      }
      const ids = new Set(
        ok.map((r) => (r as PromiseFulfilledResult<{ paymentId: string }>).value.paymentId),
      );
      expect(ids.size).toBe(1);
      expect(await countPayments(key)).toBe(1);
    });

    it('session cookie from session.start authenticates the browser path', async () => {
      const login = trpcClient({});
      await login.client.session.start.mutate({ demoTenantId: 'tenant_b' });
      const cookie = login.seen[0]!.headers.get('set-cookie')!.split(';')[0]!;
      const browser = trpcClient({ cookie, 'idempotency-key': randomUUID() });
      const paid = await browser.client.checkout.pay.mutate({
        lines: [{ productId: 'mug', quantity: 2 }],
      });
      expect(paid.amount).toBe(3000);
      expect(
        (await browser.client.checkout.status.query({ paymentId: paid.paymentId })).status,
      ).toBe('processing');
    });
  });

  describe('REST POST /api/v1/payments', () => {
    const post = (headers: Record<string, string>, body: unknown) =>
      fetch(`${server.url}/api/v1/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    const auth = { authorization: 'Bearer once_test_tenant_b' };
    const cart = { lines: [{ productId: 'espresso_beans', quantity: 1 }] };

    it('201 then a replay with Idempotent-Replayed: true and the same body; one payment', async () => {
      const key = randomUUID();
      const first = await post({ ...auth, 'idempotency-key': key }, cart);
      expect(first.status).toBe(201);
      const body = await first.json();
      expect(first.headers.get('location')).toBe(`/api/v1/payments/${body.paymentId}`);
      expect(body).toMatchObject({ status: 'processing', amount: 2450, currency: 'usd' });
      // Key order and whitespace differ: still the same request (JCS fingerprint).
      const again = await post(
        { ...auth, 'idempotency-key': `"${key}"` },
        '{ "lines" : [ { "quantity": 1, "productId": "espresso_beans" } ] }',
      );
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('location')).toBe(`/api/v1/payments/${body.paymentId}`);
      expect(await again.json()).toEqual(body);
      expect(await countPayments(key)).toBe(1);
      // The timeline: the API client's attempt and the commit, then the replayed attempt.
      const events = await database.client.sql<
        { actor: string; kind: string; detail: Record<string, unknown> }[]
      >`
        select actor, kind, detail from payment_events where payment_id = ${body.paymentId} order by seq`;
      expect(events.map((e) => [e.actor, e.kind, e.detail.replayed ?? null])).toEqual([
        ['api_client', 'pay.attempt', false],
        ['web', 'payment.committed', null],
        ['api_client', 'pay.attempt', true],
      ]);
      expect(events[2]?.detail).toMatchObject({
        key,
        transport: 'rest',
        source: 'stored_response',
      });

      const view = await fetch(`${server.url}/api/v1/payments/${body.paymentId}`, {
        headers: auth,
      });
      expect(view.status).toBe(200);
      expect(await view.json()).toMatchObject({ paymentId: body.paymentId, status: 'processing' });
      const foreign = await fetch(`${server.url}/api/v1/payments/${body.paymentId}`, {
        headers: { authorization: 'Bearer once_test_tenant_a' },
      });
      expect(foreign.status).toBe(404);
      expect(await foreign.json()).toMatchObject({ code: 'payment_not_found' });
    });

    it('same key, other body: 422 problem+json', async () => {
      const key = randomUUID();
      expect((await post({ ...auth, 'idempotency-key': key }, cart)).status).toBe(201);
      const reused = await post(
        { ...auth, 'idempotency-key': key },
        { lines: [{ productId: 'mug', quantity: 1 }] },
      );
      expect(reused.status).toBe(422);
      expect(reused.headers.get('content-type')).toBe('application/problem+json');
      expect(await reused.json()).toMatchObject({ code: 'idempotency_key_reused', status: 422 });
      expect(await countPayments(key)).toBe(1);
    });

    it('missing key 400, malformed key 400, no credentials 401, cookies ignored', async () => {
      const missing = await post(auth, cart);
      expect(missing.status).toBe(400);
      expect(await missing.json()).toMatchObject({ code: 'idempotency_key_missing' });
      const malformed = await post({ ...auth, 'idempotency-key': 'x'.repeat(256) }, cart);
      expect(malformed.status).toBe(400);
      expect(await malformed.json()).toMatchObject({ code: 'idempotency_key_invalid' });
      const anonymous = await post({ 'idempotency-key': randomUUID() }, cart);
      expect(anonymous.status).toBe(401);
      expect(await anonymous.json()).toMatchObject({ code: 'unauthenticated' });
    });

    it('refused input is 400 with a stable code and the key stays usable for the fixed cart', async () => {
      const key = randomUUID();
      const bad = await post(
        { ...auth, 'idempotency-key': key },
        { lines: [{ productId: 'mug', quantity: 0 }] },
      );
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ code: 'quantity_out_of_range' });
      const notJson = await post({ ...auth, 'idempotency-key': randomUUID() }, '{');
      expect(await notJson.json()).toMatchObject({ code: 'invalid_input' });
      expect(await countPayments(key)).toBe(0);
      // The same key, the cart fixed: a first run (not a replay of the 400, not "key reused").
      const fixed = await post({ ...auth, 'idempotency-key': key }, cart);
      expect(fixed.status).toBe(201);
      expect(fixed.headers.get('idempotent-replayed')).not.toBe('true');
      expect(await countPayments(key)).toBe(1);
    });

    it('30 concurrent requests with one key make exactly one payment', async () => {
      const key = randomUUID();
      const responses = await Promise.all(
        Array.from({ length: 30 }, () => post({ ...auth, 'idempotency-key': key }, cart)),
      );
      const statuses = responses.map((r) => r.status);
      console.log(
        `REST 30x same key: ${statuses.filter((s) => s === 201).length} x 201, ${statuses.filter((s) => s === 409).length} x 409`,
      );
      for (const s of statuses) expect([201, 409]).toContain(s);
      // Atomic mode: one first answer; every other 201 is a replay of it (409 only past lock_timeout).
      expect(
        responses.filter(
          (r) => r.status === 201 && r.headers.get('idempotent-replayed') !== 'true',
        ),
      ).toHaveLength(1);
      const conflict = responses.find((r) => r.status === 409);
      if (conflict) expect(Number(conflict.headers.get('retry-after'))).toBeGreaterThan(0);
      const ids = new Set(
        await Promise.all(
          responses.filter((r) => r.status === 201).map(async (r) => (await r.json()).paymentId),
        ),
      );
      expect(ids.size).toBe(1);
      expect(await countPayments(key)).toBe(1);
    });
  });

  describe('processor webhook receiver', () => {
    async function newPayment() {
      const response = await fetch(`${server.url}/api/v1/payments`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer once_test_tenant_a',
          'idempotency-key': randomUUID(),
        },
        body: JSON.stringify({ lines: [{ productId: 'bookmark', quantity: 2 }] }),
      });
      return (await response.json()) as { paymentId: string; amount: number };
    }

    function eventFor(
      payment: { paymentId: string; amount: number },
      type: 'payment_intent.succeeded' | 'payment_intent.payment_failed',
      extra: Record<string, unknown> = {},
    ) {
      return {
        id: `evt_${randomUUID().replaceAll('-', '')}`,
        object: 'event',
        type,
        account: 'acct_tenant_a',
        created: Math.floor(Date.now() / 1000),
        data: {
          object: {
            id: `pi_${payment.paymentId}`,
            object: 'payment_intent',
            amount: payment.amount,
            currency: 'usd',
            metadata: { payment_id: payment.paymentId, tenant_id: 'tenant_a' },
            ...extra,
          },
        },
      };
    }

    const deliver = (payload: string, secret = WEBHOOK_SECRET) =>
      fetch(`${server.url}/api/webhooks/processor`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret }),
        },
        body: payload,
      });

    const paymentRow = async (id: string) =>
      (
        await database.client
          .sql`select status, updated_at, failure_code from payments where id = ${id}`
      )[0]!;

    it('refuses a bad signature with 400 and changes nothing', async () => {
      const payment = await newPayment();
      const payload = JSON.stringify(eventFor(payment, 'payment_intent.succeeded'));
      const forged = await deliver(payload, 'whsec_someone_else');
      expect(forged.status).toBe(400);
      expect(await forged.json()).toMatchObject({ code: 'invalid_signature' });
      const unsigned = await fetch(`${server.url}/api/webhooks/processor`, {
        method: 'POST',
        body: payload,
      });
      expect(unsigned.status).toBe(400);
      expect((await paymentRow(payment.paymentId)).status).toBe('processing');
    });

    // Settling from a delivery (once per event id, from what the processor confirms, never
    // moving a terminal state back) needs the processor: test/webhook-secret-forgery.test.ts.
  });

  it('GET /api/health checks the database for real', async () => {
    const up = await fetch(`${server.url}/api/health`);
    expect(up.status).toBe(200);
    expect(await up.json()).toEqual({ ok: true, db: 'up' });

    const downDb = await createTestDatabase('web_health_down');
    const downRuntime = await startWebRuntime({
      DATABASE_URL: downDb.url,
      SESSION_SECRET: 'http-test-session-secret-0123',
    });
    const down = await serveFetch(webApiRoutes(async () => downRuntime));
    try {
      await downDb.drop();
      const response = await fetch(`${down.url}/api/health`);
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({ ok: false, db: 'down' });
    } finally {
      await down.close();
      await downRuntime.client.close();
    }
  });
});
