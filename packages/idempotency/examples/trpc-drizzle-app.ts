/**
 * A tiny tRPC + Drizzle app guarded by @once/idempotency, using ONLY the package's public
 * entry points: what another team would write. `src/proof/consumer.test.ts` runs it over real
 * HTTP with @trpc/client's httpLink.
 */
import { createServer, type Server } from 'node:http';
import { createIdempotency } from '@once/idempotency';
import { createDrizzleStore, idempotencySchemaSql } from '@once/idempotency/drizzle';
import {
  createIdempotencyPlugin,
  type IdempotencyMeta,
  idempotencyErrorFormatter,
} from '@once/idempotency/trpc';
import { initTRPC } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { z } from 'zod';

export const orders = pgTable('example_orders', {
  id: serial('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  sku: text('sku').notNull(),
  quantity: integer('quantity').notNull(),
});

type Context = { tenantId: string; headers: Headers; resHeaders: Headers };

export async function startExampleApp(databaseUrl: string) {
  const client = postgres(databaseUrl, { max: 10, onnotice: () => {} });
  await client.unsafe(idempotencySchemaSql);
  await client.unsafe(
    'create table example_orders (id serial primary key, tenant_id text not null, sku text not null, quantity int not null)',
  );
  const db = drizzle(client);

  // --- the setup of docs/quickstart-trpc.md ---
  const idempotency = createIdempotency({ store: createDrizzleStore(db) });
  const t = initTRPC
    .context<Context>()
    .meta<IdempotencyMeta>()
    .create({ errorFormatter: idempotencyErrorFormatter });
  const idempotent = createIdempotencyPlugin({
    idempotency,
    getTenantId: (ctx: Context) => ctx.tenantId, // the transaction type comes from `idempotency`
    getRequestHeaders: (ctx) => ctx.headers,
    getResponseHeaders: (ctx) => ctx.resHeaders,
  });
  // ---

  const router = t.router({
    placeOrder: t.procedure
      .meta({ idempotency: { operation: 'orders.place' } })
      .concat(idempotent)
      .input(z.object({ sku: z.string(), quantity: z.number().int().positive() }))
      .mutation(({ ctx, input }) =>
        db.transaction(async (tx) => {
          const [order] = await tx
            .insert(orders)
            .values({ tenantId: ctx.tenantId, ...input })
            .returning();
          const result = { orderId: order?.id ?? 0, sku: input.sku, quantity: input.quantity };
          await ctx.idempotency.complete(tx, result); // order + stored response: one commit
          return result;
        }),
      ),
  });

  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === 'string') headers.set(name, value);
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks),
    });
    const response = await fetchRequestHandler({
      endpoint: '/trpc',
      req: request,
      router,
      // Authentication stand-in: the tenant is the bearer token, never part of the input.
      createContext: ({ req: r, resHeaders }) => ({
        tenantId: (r.headers.get('authorization') ?? 'Bearer anonymous').slice('Bearer '.length),
        headers: r.headers,
        resHeaders,
      }),
    });
    res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/trpc`,
    router,
    sql: client,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await client.end({ timeout: 1 });
    },
  };
}

export type ExampleRouter = Awaited<ReturnType<typeof startExampleApp>>['router'];
