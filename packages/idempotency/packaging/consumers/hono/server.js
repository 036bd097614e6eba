// The Hono middleware from the installed tarball, served by @hono/node-server: POST /payments
// guarded by `idempotencyMiddleware`, the route storing its response in its transaction.
// Prints `listening <port>`.
import { serve } from '@hono/node-server';
import { createIdempotency } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { idempotencyMiddleware } from '@once/idempotency/hono';
import { drizzle } from 'drizzle-orm/postgres-js';
import { Hono } from 'hono';
import postgres from 'postgres';
import { answerGate, holdAt } from '../shared-gate.mjs';
import { createTables, payments } from '../tables.js';

const client = postgres(process.env.DATABASE_URL, { max: 5, onnotice: () => {} });
await createTables(client);
const db = drizzle(client);
const idempotency = createIdempotency({ store: createDrizzleStore(db) });

const app = new Hono();
app.get('/test/gate', (c) => answerGate(new URL(c.req.url)));
app.post(
  '/payments',
  idempotencyMiddleware({
    idempotency,
    operation: 'payments.hono',
    // Stands in for an authentication middleware's result.
    getTenantId: () => 'tenant-a',
  }),
  async (c) => {
    const input = await c.req.json();
    if (input.gate) await holdAt(input.gate);
    const exec = c.get('idempotency');
    return db.transaction(async (tx) => {
      const [payment] = await tx
        .insert(payments)
        .values({ tenantId: exec.tenantId, amount: input.amount })
        .returning();
      const response = c.json({ paymentId: payment.id, amount: payment.amount });
      await exec.complete(tx, response);
      return response;
    });
  },
);

serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
  console.log(`listening ${info.port}`),
);
