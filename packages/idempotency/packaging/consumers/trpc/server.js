// A plain Node tRPC server (no bundler, no TypeScript loader) on postgres.js + Drizzle,
// guarded by the installed @once/idempotency tarball. Prints `listening <port>`.
import { createServer } from 'node:http';
import { createIdempotency } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { createIdempotencyPlugin, idempotencyErrorFormatter } from '@once/idempotency/trpc';
import { initTRPC } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { answerGate, holdAt } from '../shared-gate.mjs';
import { payments } from './schema.js';

const client = postgres(process.env.DATABASE_URL, { max: 5, onnotice: () => {} });
const db = drizzle(client);
await migrate(db, { migrationsFolder: new URL('./drizzle', import.meta.url).pathname });

const idempotency = createIdempotency({ store: createDrizzleStore(db) });
const t = initTRPC.meta().context().create({ errorFormatter: idempotencyErrorFormatter });
const idempotent = createIdempotencyPlugin({
  idempotency,
  getTenantId: (ctx) => ctx.tenantId,
  getRequestHeaders: (ctx) => ctx.headers,
  getResponseHeaders: (ctx) => ctx.resHeaders,
});

const router = t.router({
  pay: t.procedure
    .meta({ idempotency: { operation: 'payments.create' } })
    .concat(idempotent)
    .input((value) => value)
    .mutation(async ({ ctx, input }) => {
      if (input.gate) await holdAt(input.gate);
      return db.transaction(async (tx) => {
        const [payment] = await tx
          .insert(payments)
          .values({ tenantId: ctx.tenantId, amount: input.amount })
          .returning();
        const result = { paymentId: payment.id, amount: payment.amount };
        await ctx.idempotency.complete(tx, result);
        return result;
      });
    }),
});

const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const url = new URL(req.url, `http://${req.headers.host}`);
  const request = new Request(url, {
    method: req.method,
    headers: Object.entries(req.headers).filter(([, v]) => typeof v === 'string'),
    body: req.method === 'POST' ? Buffer.concat(chunks) : undefined,
  });
  const response = url.pathname.startsWith('/test/gate')
    ? answerGate(url)
    : await fetchRequestHandler({
        endpoint: '/trpc',
        req: request,
        router,
        createContext: ({ req, resHeaders }) => ({
          tenantId: req.headers.get('x-tenant') ?? 'tenant-a',
          headers: req.headers,
          resHeaders,
        }),
      });
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
