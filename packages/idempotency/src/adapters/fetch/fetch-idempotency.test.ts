import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { fetchIdempotency } from './fetch-idempotency.ts';
import { responseOf, storedJson } from './stored-response.ts';

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('fetch_handle');
});
afterAll(async () => {
  await t?.drop();
});
// Spies on Response.prototype count body reads; each test's spies end with it.
afterEach(() => {
  vi.restoreAllMocks();
});

/** A route that has already read its body, the way real routes validate before guarding. */
async function route(
  http: ReturnType<typeof fetchIdempotency<unknown>>,
  request: Request,
  tenantId: string,
  runs: { count: number },
) {
  const params = new URLSearchParams(await request.text());
  return http.handle(
    request,
    { tenantId, operation: 'charges.create', fingerprintInput: [...params.entries()].sort() },
    (exec) =>
      t.db.transaction(async (tx) => {
        runs.count++;
        const response = Response.json(
          { id: `ch_${runs.count}`, amount: params.get('amount') },
          { status: 201, headers: { 'x-request-id': `req_${runs.count}`, location: '/c/1' } },
        );
        await exec.complete(tx, response);
        return response;
      }),
  );
}

const form = (body: string, key?: string) =>
  new Request('http://api/v1/charges', {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(key ? { 'idempotency-key': key } : {}),
    },
    body,
  });

describe('fetchIdempotency().handle', () => {
  it('guards a request whose body the route already read: runs once, replays, refuses reuse', async () => {
    const http = fetchIdempotency(createIdempotency({ store: createDrizzleStore(t.db) }), {
      replayHeaders: ['content-type', 'location'],
    });
    const runs = { count: 0 };
    const first = await route(http, form('amount=100&currency=eur', 'h1'), 'acct_a', runs);
    expect([first.status, first.headers.get('x-request-id')]).toEqual([201, 'req_1']);
    const replay = await route(http, form('currency=eur&amount=100', 'h1'), 'acct_a', runs);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('location')).toBe('/c/1');
    expect(replay.headers.get('x-request-id')).toBeNull();
    expect(await replay.json()).toEqual({ id: 'ch_1', amount: '100' });
    const reused = await route(http, form('amount=999', 'h1'), 'acct_a', runs);
    expect(reused.status).toBe(422);
    expect(reused.headers.get('content-type')).toBe('application/problem+json');
    const otherTenant = await route(http, form('amount=100&currency=eur', 'h1'), 'acct_b', runs);
    expect(otherTenant.status).toBe(201);
    expect(runs.count).toBe(2);
  });

  it('without a key: 400 problem+json by default, an unguarded run when keys are optional', async () => {
    const idempotency = createIdempotency({ store: createDrizzleStore(t.db) });
    const runs = { count: 0 };
    const refused = await route(fetchIdempotency(idempotency), form('amount=1'), 'acct_a', runs);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { code: string }).code).toBe('idempotency_key_missing');
    const optional = fetchIdempotency(idempotency, { required: false });
    await route(optional, form('amount=1'), 'acct_a', runs);
    const unguarded = await route(optional, form('amount=1'), 'acct_a', runs);
    expect(runs.count).toBe(2);
    // Nothing is stored, so `complete` left the handler's own response unread and sendable.
    expect(await unguarded.json()).toEqual({ id: 'ch_2', amount: '1' });
  });

  it('without fingerprintInput, fingerprints the body from a clone: the handler still reads it', async () => {
    const http = fetchIdempotency(createIdempotency({ store: createDrizzleStore(t.db) }));
    const json = (body: string) =>
      new Request('http://api/v1/orders', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'h2' },
        body,
      });
    const handle = (request: Request) =>
      http.handle(request, { tenantId: 'acct_a', operation: 'orders.create' }, async () =>
        Response.json(await request.json(), { status: 201 }),
      );
    expect(await (await handle(json('{"a":1,"b":2}'))).json()).toEqual({ a: 1, b: 2 });
    const replay = await handle(json('{"b":2,"a":1}'));
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await handle(json('{"a":2}'))).status).toBe(422);
  });

  it('a fingerprintInput given as a promise is fingerprinted as the value it resolves to', async () => {
    const http = fetchIdempotency(createIdempotency({ store: createDrizzleStore(t.db) }));
    const runs = { count: 0 };
    const handle = (fingerprintInput: unknown) =>
      http.handle(
        form('amount=5', 'h_promised'),
        { tenantId: 'acct_a', operation: 'charges.promised', fingerprintInput },
        async () => Response.json({ run: ++runs.count }, { status: 201 }),
      );
    expect((await handle(Promise.resolve({ amount: 5 }))).status).toBe(201);
    const replay = await handle({ amount: 5 });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await handle(Promise.resolve({ amount: 6 }))).status).toBe(422);
    expect(runs.count).toBe(1);
  });

  it('reads the handler response once, without a clone, and sends it whole: status, text, every header', async () => {
    const http = fetchIdempotency(createIdempotency({ store: createDrizzleStore(t.db) }));
    const runs = { count: 0 };
    const clone = vi.spyOn(Response.prototype, 'clone');
    const first = await route(http, form('amount=7', 'once_1'), 'acct_c', runs);
    // No tee of the body: `complete` read the handler's response, the guard sends its text.
    expect(clone).not.toHaveBeenCalled();
    expect([first.status, first.headers.get('x-request-id')]).toEqual([201, 'req_1']);
    expect(first.headers.get('content-type')).toBe('application/json');
    expect(await first.json()).toEqual({ id: 'ch_1', amount: '7' });
    const replay = await route(http, form('amount=7', 'once_1'), 'acct_c', runs);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('location')).toBe('/c/1');
    expect(await replay.json()).toEqual({ id: 'ch_1', amount: '7' });
    expect(runs.count).toBe(1);
  });

  it('completed with the stored form, the returned response is sent untouched: no clone, no read', async () => {
    const http = fetchIdempotency(createIdempotency({ store: createDrizzleStore(t.db) }));
    const runs = { count: 0 };
    const handle = () =>
      http.handle(
        form('amount=9', 'once_3'),
        { tenantId: 'acct_c', operation: 'charges.fast', policy: { mode: 'atomic' } },
        (exec) =>
          t.db.transaction(async (tx) => {
            runs.count++;
            const stored = storedJson(
              { id: 'ch_fast', amount: '9' },
              { status: 201, headers: { location: '/c/fast' } },
            );
            await exec.complete(tx, stored);
            return responseOf(stored, { 'x-request-id': 'r1' });
          }),
      );
    const clone = vi.spyOn(Response.prototype, 'clone');
    const text = vi.spyOn(Response.prototype, 'text');
    const first = await handle();
    expect(clone).not.toHaveBeenCalled();
    expect(text).not.toHaveBeenCalled();
    expect([first.status, first.headers.get('x-request-id')]).toEqual([201, 'r1']);
    expect(first.headers.get('content-type')).toBe('application/json');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await first.json()).toEqual({ id: 'ch_fast', amount: '9' });
    const replay = await handle();
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('location')).toBe('/c/fast');
    expect(replay.headers.get('content-type')).toBe('application/json');
    // Sent on the first answer only: not one of the stored headers.
    expect(replay.headers.get('x-request-id')).toBeNull();
    expect(await replay.json()).toEqual({ id: 'ch_fast', amount: '9' });
    expect(runs.count).toBe(1);
  });

  it('a response without a body is stored and sent as it is, and replayed without one', async () => {
    const http = fetchIdempotency(createIdempotency({ store: createDrizzleStore(t.db) }));
    const handle = () =>
      http.handle(
        form('id=7', 'once_4'),
        { tenantId: 'acct_c', operation: 'charges.void' },
        (exec) =>
          t.db.transaction(async (tx) => {
            const response = new Response(null, { status: 204, headers: { 'x-request-id': 'v1' } });
            await exec.complete(tx, response);
            return response;
          }),
      );
    const first = await handle();
    expect([first.status, first.headers.get('x-request-id'), first.body]).toEqual([
      204,
      'v1',
      null,
    ]);
    const replay = await handle();
    expect([replay.status, replay.headers.get('idempotent-replayed'), replay.body]).toEqual([
      204,
      'true',
      null,
    ]);
  });

  it('a handler that returns its response without completing (leased mode) gets it stored and sent whole', async () => {
    const http = fetchIdempotency(createIdempotency({ store: createDrizzleStore(t.db) }));
    const handle = () =>
      http.handle(
        form('amount=3', 'once_2'),
        { tenantId: 'acct_c', operation: 'refunds' },
        async () =>
          new Response('refunded', {
            status: 202,
            statusText: 'Accepted for refund',
            headers: { 'content-type': 'text/plain', 'set-cookie': 'session=abc' },
          }),
      );
    const first = await handle();
    expect([first.status, first.statusText]).toEqual([202, 'Accepted for refund']);
    // Cookies go to the client that caused them, never into the store.
    expect(first.headers.get('set-cookie')).toBe('session=abc');
    expect(await first.text()).toBe('refunded');
    const replay = await handle();
    expect([replay.status, replay.headers.get('set-cookie')]).toEqual([202, null]);
    expect(await replay.text()).toBe('refunded');
  });
  describe('streams: capped, never buffered forever, the key kept unknown', () => {
    /** An endless body: a chunk on every pull, forever; `cancelled` says whether the guard let go of it. */
    function endless(chunk = 'data: tick\n\n') {
      const state = { cancelled: false, pulled: 0 };
      const bytes = new TextEncoder().encode(chunk);
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          state.pulled++;
          controller.enqueue(bytes);
        },
        cancel() {
          state.cancelled = true;
        },
      });
      return { body, state };
    }

    async function guardStream(contentType: string, key: string) {
      const http = fetchIdempotency(createIdempotency({ store: createDrizzleStore(t.db) }), {
        maxResponseBytes: 4096,
      });
      const runs = { count: 0 };
      const stream = endless();
      const handle = () =>
        http.handle(form('n=1', key), { tenantId: 'acct_s', operation: 'events' }, async () => {
          runs.count++;
          return new Response(stream.body, {
            status: 200,
            headers: { 'content-type': contentType },
          });
        });
      const first = await handle();
      const retry = await handle();
      return { first, retry, runs, stream };
    }

    it('an endless body without a known length: reading stops at the cap, 500 unstorable, retries 409 unknown', async () => {
      const { first, retry, runs, stream } = await guardStream('application/octet-stream', 'st_1');
      expect(first.status).toBe(500);
      expect(((await first.json()) as { code: string }).code).toBe('idempotency_result_unstorable');
      expect(stream.state.cancelled).toBe(true);
      // Read up to the cap and a chunk over it, not forever.
      expect(stream.state.pulled).toBeLessThan(4096 / 12 + 10);
      expect(retry.status).toBe(409);
      expect(((await retry.json()) as { code: string }).code).toBe('idempotency_outcome_unknown');
      expect(runs.count).toBe(1);
    }, 10_000);

    it('a text/event-stream response is refused as unstorable without reading it to its end', async () => {
      const { first, retry, runs, stream } = await guardStream(
        'text/event-stream; charset=utf-8',
        'st_2',
      );
      expect(first.status).toBe(500);
      expect(((await first.json()) as { code: string }).code).toBe('idempotency_result_unstorable');
      expect(stream.state.cancelled).toBe(true);
      expect(retry.status).toBe(409);
      expect(((await retry.json()) as { code: string }).code).toBe('idempotency_outcome_unknown');
      expect(runs.count).toBe(1);
    }, 10_000);

    it('a body within the cap is still stored and sent whole', async () => {
      const http = fetchIdempotency(createIdempotency({ store: createDrizzleStore(t.db) }), {
        maxResponseBytes: 4096,
      });
      const handle = () =>
        http.handle(
          form('n=2', 'st_3'),
          { tenantId: 'acct_s', operation: 'events' },
          async () => new Response(new Blob(['x'.repeat(4096)]).stream(), { status: 200 }),
        );
      expect((await (await handle()).text()).length).toBe(4096);
      const replay = await handle();
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect((await replay.text()).length).toBe(4096);
    });
  });
});
