import { createServer } from 'node:net';
import { initTRPC } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withIdempotency } from '../adapters/fetch/with-idempotency.ts';
import { idempotencyErrorFormatter } from '../adapters/trpc/error-formatter.ts';
import { createIdempotencyPlugin, type IdempotencyMeta } from '../adapters/trpc/plugin.ts';
import { createIdempotency } from '../core/engine.ts';
import type { IdempotencyEvent } from '../core/types.ts';
import { StoreTimeoutError } from '../core/with-timeout.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import { startTcpProxy, type TcpProxy, viaPort } from '../testing/tcp-proxy.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

let t: IdempotencyTestDatabase;
let proxy: TcpProxy;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('failclosed');
  const u = new URL(t.url);
  proxy = await startTcpProxy(u.hostname, Number(u.port));
});
afterAll(async () => {
  await proxy?.close();
  await t?.drop();
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The guarded endpoint's store timeout, and the connection's own (far longer) give-up. */
const STORE_TIMEOUT_MS = 500;
const CONNECT_TIMEOUT_S = 30;

function guardedEndpoint(url: string, events: IdempotencyEvent[], runs: { n: number }) {
  const client = postgres(url, { max: 2, connect_timeout: CONNECT_TIMEOUT_S, onnotice: () => {} });
  const idempotency = createIdempotency({
    store: createDrizzleStore(drizzle(client)),
    storeTimeoutMs: STORE_TIMEOUT_MS,
    onEvent: (e) => events.push(e),
  });
  const handler = withIdempotency(
    async () => {
      runs.n++;
      return Response.json({ charged: true });
    },
    { idempotency, operation: 'pay', getTenantId: () => 't' },
  );
  return { handler, close: () => client.end({ timeout: 0 }) };
}

const request = () =>
  new Request('http://test/pay', {
    method: 'POST',
    headers: { 'idempotency-key': 'k' },
    body: '{}',
  });

describe('fail closed', () => {
  it('answers 503 + Retry-After and never runs the handler when Postgres refuses connections', async () => {
    const events: IdempotencyEvent[] = [];
    const runs = { n: 0 };
    const endpoint = guardedEndpoint(viaPort(t.url, await closedPort()), events, runs);
    const started = performance.now();
    const response = await endpoint.handler(request());
    console.log(
      `fail-closed (connection refused): 503 after ${(performance.now() - started).toFixed(0)} ms`,
    );
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('2');
    expect(((await response.json()) as { code: string }).code).toBe(
      'idempotency_store_unavailable',
    );
    expect(runs.n).toBe(0);
    expect(events.some((e) => e.type === 'store_error')).toBe(true);
    await endpoint.close();
  });

  it('answers 503 within the store timeout when Postgres hangs (blackhole), handler never runs', async () => {
    proxy.mode = 'blackhole';
    const events: IdempotencyEvent[] = [];
    const runs = { n: 0 };
    const endpoint = guardedEndpoint(viaPort(t.url, proxy.port), events, runs);
    const started = performance.now();
    const responses = await Promise.all([endpoint.handler(request()), endpoint.handler(request())]);
    console.log(
      `fail-closed (hung database, storeTimeoutMs 500): 503 after ${(performance.now() - started).toFixed(0)} ms`,
    );
    const elapsedMs = performance.now() - started;
    expect(responses.map((r) => r.status)).toEqual([503, 503]);
    expect(runs.n).toBe(0);
    // The store timeout is what answered, by the engine's own measure: each request's store
    // call failed with StoreTimeoutError after at least the timeout. The hung connection's
    // own give-up (30 s) would be a different error, far later. The wall-clock bound is only
    // a loose backstop a third of the way to that give-up, never a tight one.
    const storeErrors = events.filter((e) => e.type === 'store_error');
    expect(storeErrors.length).toBeGreaterThanOrEqual(2);
    for (const e of storeErrors) {
      expect((e.error as { error: unknown }).error).toBeInstanceOf(StoreTimeoutError);
      expect(e.durationMs).toBeGreaterThanOrEqual(STORE_TIMEOUT_MS - 5);
    }
    expect(elapsedMs).toBeLessThan((CONNECT_TIMEOUT_S * 1000) / 3);
    proxy.mode = 'forward';
    await endpoint.close();
  });

  it('tRPC: SERVICE_UNAVAILABLE with data.idempotency and Retry-After, procedure never runs', async () => {
    const client = postgres(viaPort(t.url, await closedPort()), { max: 1, onnotice: () => {} });
    const idempotency = createIdempotency({
      store: createDrizzleStore(drizzle(client)),
      storeTimeoutMs: 500,
    });
    type Ctx = { headers: Headers; resHeaders: Headers };
    const trpc = initTRPC
      .context<Ctx>()
      .meta<IdempotencyMeta>()
      .create({ errorFormatter: idempotencyErrorFormatter });
    const plugin = createIdempotencyPlugin({
      idempotency,
      getTenantId: (_ctx: Ctx) => 't',
      getRequestHeaders: (ctx) => ctx.headers,
      getResponseHeaders: (ctx) => ctx.resHeaders,
    });
    let runs = 0;
    const router = trpc.router({
      pay: trpc.procedure
        .meta({ idempotency: { operation: 'pay' } })
        .concat(plugin)
        .mutation(() => ++runs),
    });
    const response = await fetchRequestHandler({
      endpoint: '/trpc',
      router,
      req: new Request('http://test/trpc/pay', {
        method: 'POST',
        headers: { 'idempotency-key': 'k', 'content-type': 'application/json' },
        body: '{}',
      }),
      createContext: ({ req, resHeaders }) => ({ headers: req.headers, resHeaders }),
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('2');
    const body = (await response.json()) as {
      error: { data: { code: string; idempotency: { code: string } } };
    };
    expect(body.error.data.code).toBe('SERVICE_UNAVAILABLE');
    expect(body.error.data.idempotency.code).toBe('idempotency_store_unavailable');
    expect(runs).toBe(0);
    await client.end({ timeout: 0 });
  });
});
