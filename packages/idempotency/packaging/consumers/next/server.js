// The Next.js adapter from the installed tarball, run with Next's own request class
// (`NextRequest` from next/server) without a `next build`: an app-router route handler
// (POST /route) and a Server Action called with the FormData a form would post (POST /action).
// Prints `listening <port>`.
import { createServer } from 'node:http';
import { createIdempotency } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import {
  IDEMPOTENCY_KEY_FIELD,
  idempotentAction,
  idempotentRouteHandler,
} from '@once/idempotency/next';
import { drizzle } from 'drizzle-orm/postgres-js';
import nextServer from 'next/server.js';
import postgres from 'postgres';
import { answerGate, holdAt } from '../shared-gate.mjs';
import { createTables, payments } from '../tables.js';

const { NextRequest } = nextServer;
const client = postgres(process.env.DATABASE_URL, { max: 5, onnotice: () => {} });
await createTables(client);
const db = drizzle(client);
const idempotency = createIdempotency({ store: createDrizzleStore(db) });
/** Stands in for the caller's session (cookies() in a real app). */
const session = async () => ({ tenantId: 'tenant-a' });

async function insertPayment(tx, tenantId, amount) {
  const [payment] = await tx.insert(payments).values({ tenantId, amount }).returning();
  return { paymentId: payment.id, amount: payment.amount };
}

// app/api/payments/route.ts
export const POST = idempotentRouteHandler(
  async (request, exec) => {
    const input = await request.json();
    if (input.gate) await holdAt(input.gate);
    const result = await db.transaction((tx) => insertPayment(tx, exec.tenantId, input.amount));
    return Response.json(result);
  },
  {
    idempotency,
    operation: 'payments.route',
    getTenantId: async () => (await session()).tenantId,
  },
);

// app/actions.ts ('use server')
export const payAction = idempotentAction(
  async (exec, form) => {
    const gate = form.get('gate');
    if (gate) await holdAt(String(gate));
    return db.transaction(async (tx) => {
      const result = await insertPayment(tx, exec.tenantId, Number(form.get('amount')));
      await exec.complete(tx, result);
      return result;
    });
  },
  {
    idempotency,
    operation: 'payments.action',
    getTenantId: async () => (await session()).tenantId,
  },
);

async function toNextRequest(req, url) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return new NextRequest(url, {
    method: req.method,
    headers: Object.entries(req.headers).filter(([, v]) => typeof v === 'string'),
    body: req.method === 'POST' ? Buffer.concat(chunks) : undefined,
  });
}

async function answer(req, url) {
  if (url.pathname.startsWith('/test/gate')) return answerGate(url);
  const request = await toNextRequest(req, url);
  if (url.pathname === '/route') return POST(request, { params: Promise.resolve({}) });
  // The form a page renders: the key in a hidden field, rendered once per intent.
  const input = await request.json();
  const form = new FormData();
  form.set(IDEMPOTENCY_KEY_FIELD, request.headers.get('idempotency-key') ?? '');
  form.set('amount', String(input.amount));
  if (input.gate) form.set('gate', input.gate);
  const result = await payAction(form);
  if (result.ok) {
    return Response.json(result.data, {
      headers: result.replayed ? { 'idempotent-replayed': 'true' } : {},
    });
  }
  return Response.json(
    { code: result.code },
    {
      status: result.status,
      headers: result.retryAfterSeconds ? { 'retry-after': String(result.retryAfterSeconds) } : {},
    },
  );
}

const server = createServer(async (req, res) => {
  const response = await answer(req, new URL(req.url, `http://${req.headers.host}`));
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
