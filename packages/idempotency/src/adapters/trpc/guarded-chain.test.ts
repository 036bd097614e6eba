import { initTRPC } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createIdempotency } from '../../core/engine.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { idempotencyErrorFormatter } from './error-formatter.ts';
import { createIdempotencyPlugin, type IdempotencyMeta } from './plugin.ts';

/**
 * The plugin with its defaults, in the order a quickstart writes it (`.concat(idempotent)`
 * before `.input(...)`): a request refused before the handler ran leaves the key free, and a
 * chain that concatenates the plugin without naming its operation never runs unguarded.
 */
type Context = { tenantId: string; headers: Headers; resHeaders: Headers };

let t: IdempotencyTestDatabase;
let handle: (request: Request) => Promise<Response>;
const runs = { order: 0, forgotMeta: 0 };

beforeAll(async () => {
  t = await createIdempotencyTestDatabase('trpc_chain');
  const trpc = initTRPC
    .context<Context>()
    .meta<IdempotencyMeta>()
    .create({ errorFormatter: idempotencyErrorFormatter });
  const idempotent = createIdempotencyPlugin({
    idempotency: createIdempotency({ store: createDrizzleStore(t.db) }),
    getTenantId: (ctx: Context) => ctx.tenantId,
    getRequestHeaders: (ctx) => ctx.headers,
    getResponseHeaders: (ctx) => ctx.resHeaders,
  });
  const router = trpc.router({
    order: trpc.procedure
      .meta({ idempotency: { operation: 'orders.place' } })
      .concat(idempotent)
      .input(z.object({ sku: z.string() }))
      .mutation(({ input }) => {
        runs.order++;
        return { sku: input.sku, run: runs.order };
      }),
    forgotMeta: trpc.procedure.concat(idempotent).mutation(() => {
      runs.forgotMeta++;
      return { ran: true };
    }),
  });
  handle = (req) =>
    fetchRequestHandler({
      endpoint: '/trpc',
      req,
      router,
      createContext: ({ req, resHeaders }) => ({
        tenantId: 'tenant-a',
        headers: req.headers,
        resHeaders,
      }),
    });
});
afterAll(async () => {
  await t?.drop();
});

function call(path: string, input: unknown, key: string) {
  return handle(
    new Request(`http://test/trpc/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(input),
    }),
  );
}

describe('tRPC plugin: what its defaults guard', () => {
  it('input refused by the schema after the plugin stores nothing: the corrected retry runs under the same key', async () => {
    const refused = await call('order', { sku: 42 }, 'k-invalid-first');
    expect(refused.status).toBe(400);
    const rows = await t.sql`select state from idempotency_keys where key = 'k-invalid-first'`;
    expect(rows.map((r) => r.state)).toEqual(['released']);
    const corrected = await call('order', { sku: 'book' }, 'k-invalid-first');
    expect(corrected.status).toBe(200);
    expect(corrected.headers.get('idempotent-replayed')).toBeNull();
    expect(runs.order).toBe(1);
    const replayed = await call('order', { sku: 'book' }, 'k-invalid-first');
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(runs.order).toBe(1);
  });

  it('a procedure that concatenates the plugin without meta({ idempotency }) fails and never runs', async () => {
    const first = await call('forgotMeta', null, 'k-no-meta');
    const second = await call('forgotMeta', null, 'k-no-meta');
    expect([first.status, second.status]).toEqual([500, 500]);
    const body = (await first.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(
      /forgotMeta.*meta\(\{ idempotency: \{ operation \} \}\).*unguarded/,
    );
    expect(runs.forgotMeta).toBe(0);
  });
});
