import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { IDEMPOTENCY_ERRORS } from '../../core/errors.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { storedResponseFrom } from './stored-response.ts';
import { withIdempotency } from './with-idempotency.ts';

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('fetch');
});
afterAll(async () => {
  await t?.drop();
});

const post = (body: string, headers: Record<string, string> = {}) =>
  new Request('http://test/v1/payments', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer tenant-a', ...headers },
    body,
  });

describe('withIdempotency (fetch)', () => {
  it('replays status, body and allow-listed headers, never Set-Cookie, with Idempotent-Replayed', async () => {
    let runs = 0;
    const handler = withIdempotency(
      async () => {
        runs++;
        return new Response(JSON.stringify({ id: 'pay_1', run: runs }), {
          status: 201,
          headers: {
            'content-type': 'application/json',
            location: '/v1/payments/pay_1',
            'set-cookie': 'session=secret',
            'x-debug': '1',
          },
        });
      },
      {
        idempotency: createIdempotency({ store: createDrizzleStore(t.db) }),
        operation: 'payments.create',
        getTenantId: (r) => r.headers.get('authorization') ?? '',
        replayHeaders: ['content-type', 'location', 'set-cookie'],
      },
    );
    const first = await handler(
      post('{"amount": 100, "currency": "eur"}', { 'idempotency-key': 'k1' }),
    );
    expect(first.status).toBe(201);
    expect(first.headers.get('set-cookie')).toBe('session=secret');
    const replay = await handler(
      post('{"currency":"eur","amount":100.0}', { 'idempotency-key': '"k1"' }),
    );
    expect(runs).toBe(1);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('location')).toBe('/v1/payments/pay_1');
    expect(replay.headers.get('content-type')).toBe('application/json');
    expect(replay.headers.get('set-cookie')).toBeNull();
    expect(replay.headers.get('x-debug')).toBeNull();
    expect(await replay.json()).toEqual({ id: 'pay_1', run: 1 });
  });

  it('renders refusals as RFC 9457 problem+json with documented type URIs', async () => {
    const handler = withIdempotency(async () => Response.json({ ok: true }), {
      idempotency: createIdempotency({ store: createDrizzleStore(t.db) }),
      operation: 'payments.create',
      getTenantId: () => 'tenant-a',
    });
    const missing = await handler(post('{}'));
    expect(missing.status).toBe(400);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');
    expect(await missing.json()).toMatchObject({
      type: IDEMPOTENCY_ERRORS.idempotency_key_missing.type,
      status: 400,
      code: 'idempotency_key_missing',
    });
    await handler(post('{"a":1}', { 'idempotency-key': 'k2' }));
    const reused = await handler(post('{"a":2}', { 'idempotency-key': 'k2' }));
    expect(reused.status).toBe(422);
    expect(((await reused.json()) as { code: string }).code).toBe('idempotency_key_reused');
  });

  it('supports Stripe semantics: optional keys, per-account scope, form fingerprint, custom errors, completion in a transaction', async () => {
    let charges = 0;
    const idempotency = createIdempotency({ store: createDrizzleStore(t.db) });
    const stripeError = (status: number, type: string, message: string) =>
      Response.json({ error: { type, message } }, { status });
    const handler = withIdempotency(
      async (_request, exec) =>
        t.db.transaction(async (tx) => {
          charges++;
          const response = Response.json({ id: `ch_${charges}`, object: 'charge' });
          await exec.complete(tx, await storedResponseFrom(response));
          return response;
        }),
      {
        idempotency,
        operation: (r) => `${r.method} ${new URL(r.url).pathname}`,
        getTenantId: (r) => (r.headers.get('authorization') ?? '').replace('Bearer ', ''),
        required: false,
        getFingerprintInput: async (r) => [...new URLSearchParams(await r.text()).entries()].sort(),
        renderError: (error) =>
          error.code === 'idempotency_key_reused'
            ? stripeError(
                400,
                'idempotency_error',
                'Keys for idempotent requests can only be used with the same parameters',
              )
            : stripeError(error.status, 'invalid_request_error', error.code),
      },
    );
    const form = (body: string, account: string, key?: string) =>
      new Request('http://processor/v1/charges', {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Bearer ${account}`,
          ...(key ? { 'idempotency-key': key } : {}),
        },
        body,
      });
    await handler(form('amount=100&currency=eur', 'sk_a', 'stripe-1'));
    const replay = await handler(form('currency=eur&amount=100', 'sk_a', 'stripe-1'));
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual({ id: 'ch_1', object: 'charge' });
    const otherAccount = await handler(form('amount=100&currency=eur', 'sk_b', 'stripe-1'));
    expect(await otherAccount.json()).toEqual({ id: 'ch_2', object: 'charge' });
    const reused = await handler(form('amount=999&currency=eur', 'sk_a', 'stripe-1'));
    expect(reused.status).toBe(400);
    expect(((await reused.json()) as { error: { type: string } }).error.type).toBe(
      'idempotency_error',
    );
    await handler(form('amount=1', 'sk_a'));
    await handler(form('amount=1', 'sk_a'));
    expect(charges).toBe(4);
  });

  it('atomic policy: concurrent requests with one key create once, the rest replay the stored 201', async () => {
    await t.sql`create table if not exists fetch_payments (key text)`;
    const handler = withIdempotency<unknown>(
      async (_request, exec) =>
        t.db.transaction(async (tx) => {
          await tx.execute(sql`insert into fetch_payments values (${exec.key ?? null})`);
          await tx.execute(sql`select pg_sleep(0.02)`);
          const response = Response.json(
            { ok: true },
            { status: 201, headers: { location: '/p/1' } },
          );
          await exec.complete(tx, await storedResponseFrom(response));
          return response;
        }),
      {
        idempotency: createIdempotency({ store: createDrizzleStore(t.db) as never }),
        operation: 'payments.atomic',
        getTenantId: () => 'tenant-a',
        policy: { mode: 'atomic' },
      },
    );
    const responses = await Promise.all(
      Array.from({ length: 10 }, () =>
        handler(post('{"amount":1}', { 'idempotency-key': 'atomic-fetch' })),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(201));
    expect(responses.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(
      9,
    );
    for (const r of responses) expect(r.headers.get('location')).toBe('/p/1');
    const [row] =
      await t.sql`select count(*)::int as n from fetch_payments where key = 'atomic-fetch'`;
    expect(row?.n).toBe(1);
  });

  it('a 409 for a held key never claims the holder still runs: it may have stopped, its key free when the lease ends; Retry-After says when to ask again', async () => {
    // A holder that never answers: from the key's side, a process killed mid-handler.
    const handler = withIdempotency(() => new Promise<Response>(() => {}), {
      idempotency: createIdempotency({ store: createDrizzleStore(t.db) }),
      operation: 'payments.hung',
      getTenantId: () => 'tenant-a',
      policy: { leaseMs: 20_000, heartbeat: false },
    });
    void handler(post('{}', { 'idempotency-key': 'k-hung' }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const busy = await handler(post('{}', { 'idempotency-key': 'k-hung' }));
    expect(busy.status).toBe(409);
    const retryAfter = Number(busy.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    const { title } = (await busy.json()) as { title: string };
    expect(title).not.toMatch(/still being processed/);
    expect(title).toMatch(/stopped/);
    expect(title).toMatch(/lease/);
  });
});
