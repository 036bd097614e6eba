import type { AddressInfo } from 'node:net';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { initTRPC } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createIdempotency } from '../../core/engine.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { idempotencyErrorFormatter } from './error-formatter.ts';
import { createIdempotencyPlugin, type IdempotencyMeta } from './plugin.ts';
import { idempotencyResponseMeta } from './response-meta.ts';

/**
 * tRPC's standalone (Node) adapter has no `resHeaders`: the documented context makes one and
 * `idempotencyResponseMeta` sends it; a setup that forgets says so in one line. A batch of
 * calls sharing one key is refused with a message naming batching as the cause.
 */
type Context = { tenantId: string; headers: Headers; resHeaders?: Headers };

let t: IdempotencyTestDatabase;
const servers: ReturnType<typeof createHTTPServer>[] = [];
let release!: () => void;
const held = new Promise<void>((resolve) => {
  release = resolve;
});
let entered = false;

function createRouter() {
  const db = t.db;
  const trpc = initTRPC
    .context<Context>()
    .meta<IdempotencyMeta>()
    .create({ errorFormatter: idempotencyErrorFormatter });
  const idempotent = createIdempotencyPlugin({
    idempotency: createIdempotency({ store: createDrizzleStore(db) }),
    getTenantId: (ctx: Context) => ctx.tenantId,
    getRequestHeaders: (ctx) => ctx.headers,
    getResponseHeaders: (ctx) => ctx.resHeaders,
  });
  const router = trpc.router({
    pay: trpc.procedure
      .meta({ idempotency: { operation: 'pay' } })
      .concat(idempotent)
      .input(z.object({ amount: z.number(), hold: z.boolean().optional() }))
      .mutation(async ({ ctx, input }) => {
        if (input.hold) {
          entered = true;
          await held;
        }
        return db.transaction(async (tx) => {
          await tx.execute(sql`select ${input.amount}::int`);
          const result = { paid: input.amount };
          await ctx.idempotency.complete(tx, result);
          return result;
        });
      }),
  });
  return router;
}
type AppRouter = ReturnType<typeof createRouter>;

/** `full`: as documented; `headers-only`: resHeaders without responseMeta; `none`: neither. */
async function startServer(setup: 'full' | 'headers-only' | 'none'): Promise<string> {
  const server = createHTTPServer({
    router: createRouter(),
    createContext: ({ req }) => ({
      tenantId: 'tenant-a',
      headers: new Headers(req.headers as Record<string, string>),
      ...(setup !== 'none' ? { resHeaders: new Headers() } : {}),
    }),
    ...(setup === 'full' ? { responseMeta: idempotencyResponseMeta } : {}),
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const pay = (url: string, key: string, input: object) =>
  fetch(`${url}/pay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(input),
  });

beforeAll(async () => {
  t = await createIdempotencyTestDatabase('trpc_standalone');
});
afterAll(async () => {
  release();
  for (const server of servers) server.close();
  await t?.drop();
});

describe('tRPC standalone adapter', () => {
  it('with idempotencyResponseMeta: a replay says Idempotent-Replayed, a 409 keeps Retry-After, nothing is logged', async () => {
    const log = vi.spyOn(console, 'error');
    const url = await startServer('full');
    expect((await pay(url, 'sa-1', { amount: 5 })).status).toBe(200);
    const replay = await pay(url, 'sa-1', { amount: 5 });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    const first = pay(url, 'sa-2', { amount: 7, hold: true });
    await vi.waitFor(() => expect(entered).toBe(true));
    const duplicate = await pay(url, 'sa-2', { amount: 7, hold: true });
    expect(duplicate.status).toBe(409);
    expect(Number(duplicate.headers.get('retry-after'))).toBeGreaterThan(0);
    release();
    expect((await first).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(log).not.toHaveBeenCalled();
    log.mockRestore();
  });

  it('resHeaders without responseMeta: the first replay logs one line saying what to add', async () => {
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const url = await startServer('headers-only');
      await pay(url, 'sa-4', { amount: 5 });
      expect((await pay(url, 'sa-4', { amount: 5 })).headers.get('idempotent-replayed')).toBeNull();
      await pay(url, 'sa-4', { amount: 5 });
      await vi.waitFor(() => expect(log).toHaveBeenCalled(), { timeout: 3_000 });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(log).toHaveBeenCalledTimes(1);
      expect(String(log.mock.calls[0]?.[0])).toMatch(
        /Idempotent-Replayed was not sent.*responseMeta: idempotencyResponseMeta/,
      );
    } finally {
      log.mockRestore();
    }
  });

  it('without response headers: the first replay logs one line saying what to add', async () => {
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const url = await startServer('none');
      await pay(url, 'sa-3', { amount: 5 });
      await pay(url, 'sa-3', { amount: 5 });
      await pay(url, 'sa-3', { amount: 5 });
      expect(log).toHaveBeenCalledTimes(1);
      expect(String(log.mock.calls[0]?.[0])).toMatch(
        /Idempotent-Replayed was not sent.*responseMeta: idempotencyResponseMeta/,
      );
    } finally {
      log.mockRestore();
    }
  });

  it('a batch (httpBatchLink) sharing one key: the refusal names batching as the cause', async () => {
    const url = await startServer('full');
    const client = createTRPCClient<AppRouter>({
      links: [httpBatchLink({ url, headers: { 'idempotency-key': 'batch-1' } })],
    });
    const results = await Promise.allSettled([
      client.pay.mutate({ amount: 1 }),
      client.pay.mutate({ amount: 2 }),
    ]);
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(1);
    expect(String((refused[0] as PromiseRejectedResult).reason.message)).toMatch(
      /batched with others into one HTTP request.*httpLink/,
    );
  });
});
