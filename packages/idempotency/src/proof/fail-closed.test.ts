import { createServer } from 'node:net';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withIdempotency } from '../adapters/fetch/with-idempotency.ts';
import { createIdempotency } from '../core/engine.ts';
import type { IdempotencyEvent } from '../core/types.ts';
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

function guardedEndpoint(url: string, events: IdempotencyEvent[], runs: { n: number }) {
  const client = postgres(url, { max: 2, connect_timeout: 30, onnotice: () => {} });
  const idempotency = createIdempotency({
    store: createDrizzleStore(drizzle(client)),
    storeTimeoutMs: 500,
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
    const response = await endpoint.handler(request());
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
    const responses = await Promise.all([endpoint.handler(request()), endpoint.handler(request())]);
    expect(responses.map((r) => r.status)).toEqual([503, 503]);
    expect(runs.n).toBe(0);
    proxy.mode = 'forward';
    await endpoint.close();
  });
});
