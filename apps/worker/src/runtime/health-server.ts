import { createServer, type Server } from 'node:http';
import { DEFAULT_BIND_HOST } from '@once/env';

/**
 * GET /healthz -> 200 while the worker runs. Liveness only: a database outage is something the
 * worker rides out, not a reason to be restarted.
 */
export async function startHealthServer(
  port: number,
  status: () => Record<string, unknown>,
  host = DEFAULT_BIND_HOST,
): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.method === 'GET' && request.url?.split('?')[0] === '/healthz') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ ok: true, ...status() }));
      return;
    }
    response.writeHead(404, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ ok: false, error: 'not_found' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: Error) =>
      reject(new Error(`cannot listen on ${host}:${port} for /healthz: ${error.message}`)),
    );
    server.listen(port, host, () => resolve());
  });
  return server;
}
