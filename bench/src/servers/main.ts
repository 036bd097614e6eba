// The server under test, run as its own process: `node --import tsx bench/src/servers/main.ts`.
// env: PORT, DATABASE_URL, DB_POOL_MAX (default 20), REDIS_URL (optional: peer routes).
import http from 'node:http';
import { appRouter, createApiDependencies, createContext } from '@once/api';
import { createDatabaseClient, requireDatabaseUrl } from '@once/db';
import { integer, parseEnv } from '@once/env';
import { createIdempotency } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import type { FetchHandler } from './fetch-routes.ts';
import type { Transaction } from './payment-write.ts';
import { createNodeIdempotencyHandler, createPowertoolsHandler } from './peer-routes.ts';
import { createPaymentRoutes } from './routes.ts';

const env = readEnv();
const port = env.PORT;
const client = createDatabaseClient(requireDatabaseUrl(), {
  applicationName: 'once-bench-server',
  max: env.DB_POOL_MAX,
});
const idempotency = createIdempotency<Transaction>({ store: createDrizzleStore(client.db) });
const paymentRoutes = createPaymentRoutes(client.db, idempotency);
const routes = new Map<string, FetchHandler>();
// The application's real router (checkout.pay and friends), for the end-to-end scenario.
const api = createApiDependencies({ db: client.db, sessionSecret: 'once-bench-session-secret' });
const appTrpc = (req: Request) =>
  fetchRequestHandler({
    endpoint: '/api/trpc',
    req,
    router: appRouter,
    createContext: ({ req, resHeaders }) => createContext({ req, resHeaders, ...api }),
  });
// The bench reads the server's CPU time around each run (CPU per request per variant).
routes.set('/_cpu', async () => {
  const { user, system } = process.cpuUsage();
  return Response.json({ ms: (user + system) / 1000 });
});
// The processor's webhooks land here and are dropped: the end-to-end scenario times the worker's path.
routes.set('/webhooks/sink', async () => new Response(null, { status: 204 }));
const closers: (() => Promise<unknown>)[] = [];
if (process.env.REDIS_URL) {
  const powertools = await createPowertoolsHandler(client.db, process.env.REDIS_URL);
  const nodeIdempotency = await createNodeIdempotencyHandler(client.db, process.env.REDIS_URL);
  routes.set('/peer/powertools', powertools.handler);
  routes.set('/peer/node-idempotency', nodeIdempotency.handler);
  closers.push(powertools.close, nodeIdempotency.close);
}

/** Every variant goes through the same node -> web Request bridge, so the bridge costs all the same. */
const server = http.createServer(async (req, res) => {
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = `http://127.0.0.1${req.url}`;
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === 'string') headers.set(name, value);
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const request = new Request(url, {
      method: req.method,
      headers,
      ...(hasBody ? { body: Buffer.concat(chunks) } : {}),
    });
    const pathname = new URL(url).pathname;
    const handler = pathname.startsWith('/api/trpc/')
      ? appTrpc
      : (paymentRoutes(pathname) ?? routes.get(pathname));
    const response = handler ? await handler(request) : new Response('not found', { status: 404 });
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  } catch (error) {
    // A store outage while the bench restarts Postgres or Redis lands here: the client retries.
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(String((error as Error).message));
  }
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening ${typeof address === 'object' && address ? address.port : port}`);
});

async function shutdown() {
  server.close();
  server.closeAllConnections();
  await Promise.allSettled(closers.map((close) => close()));
  await client.close();
  process.exit(0);
}
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);

/** PORT 0 asks the OS for a free port; a malformed value stops start-up with one line. */
function readEnv() {
  try {
    return parseEnv(
      { PORT: integer({ default: 0, max: 65_535 }), DB_POOL_MAX: integer({ default: 20, min: 1 }) },
      process.env,
    );
  } catch (error) {
    console.error(`bench-server: cannot start: ${(error as Error).message}`);
    process.exit(1);
  }
}
