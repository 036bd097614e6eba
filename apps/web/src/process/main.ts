/**
 * The web process in production: serves the Next.js build and exits 0 on SIGTERM/SIGINT after
 * in-flight requests finish (`next start` exits 143, which orchestrators report as a failure).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import next from 'next';
import { dropArmedPayResponse } from '../server/chaos/drop-next-response.ts';
import { readWebEnv } from '../server/web-env.ts';
import { stampClientAddress } from './client-address.ts';
import { refuseForeignHost } from './host-guard.ts';
import { readWebServerConfig, type WebServerConfig } from './web-server-config.ts';

/** Never hang past the 5 s an orchestrator waits before SIGKILL; committed work is durable. */
const SHUTDOWN_DEADLINE_MS = 4_500;
const log = (line: string) => console.log(`${new Date().toISOString()} web: ${line}`);

let config: WebServerConfig;
try {
  config = readWebServerConfig(process.env);
  // The runtime's own variables too, refused now rather than at the first request. This is the
  // production server: Next sets NODE_ENV=production only once it loads.
  readWebEnv({ ...process.env, NODE_ENV: process.env.NODE_ENV ?? 'production' });
} catch (error) {
  console.error(`web: cannot start: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}

let stopping = false;
let stop: () => Promise<void> = async () => {};
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: finishing in-flight requests`);
    setTimeout(() => {
      log('shutdown deadline reached, exiting');
      process.exit(0);
    }, SHUTDOWN_DEADLINE_MS).unref();
    stop().then(
      () => {
        log('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        log(`shutdown error: ${String(error)}`);
        process.exit(1);
      },
    );
  });
}

const dir = fileURLToPath(new URL('../..', import.meta.url));
const app = next({ dev: false, dir, hostname: config.host, port: config.port });
const handle = app.getRequestHandler();
// Demo chaos switches only (the launcher sets ONCE_CHAOS_URL): the hook that drops an armed
// browser's next pay answer. Without them, requests go straight to Next.
// Every request carries the client's address as this server saw it (session.start counts
// attempts per address); nothing a client sends can choose it.
const dropArmed = Boolean(process.env.ONCE_CHAOS_URL);
// A request naming a host that is not this server's (DNS rebinding) is refused first.
const server = createServer((request, response) => {
  if (refuseForeignHost(request, response, config.allowedHostNames)) return;
  stampClientAddress(request, config.trustProxy);
  if (dropArmed) dropArmedPayResponse(request, response);
  void handle(request, response);
});
try {
  await app.prepare();
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) =>
      reject(new Error(`cannot listen on ${config.host}:${config.port}: ${error.message}`)),
    );
    server.listen(config.port, config.host, () => resolve());
  });
} catch (error) {
  console.error(`web: cannot start: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}
stop = async () => {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    // Idle keep-alive sockets would hold close() open until their timeout; a socket whose
    // request finishes after this point goes idle too, hence the repeat. In-flight requests
    // still finish.
    server.closeIdleConnections();
    setInterval(() => server.closeIdleConnections(), 100).unref();
  });
  log('no connection left; closing Next');
  await app.close();
};
log(`listening on http://${config.host}:${config.port}`);

// Warm up now rather than on a customer's first request: the first request starts the runtime
// (migrations, the demo seed unless ONCE_SEED_DEMO=0, the pool). A database still starting is
// no failure: /api/health answers 503 and the next request tries again.
const { port } = server.address() as AddressInfo;
fetch(`${localUrl(config.host, port)}/api/health`, { signal: AbortSignal.timeout(30_000) }).then(
  (response) => log(`warm-up: /api/health ${response.status}`),
  (error: unknown) => log(`warm-up: /api/health failed: ${String(error)}`),
);

/** How this machine reaches a server bound to `host` (a wildcard: over loopback). */
function localUrl(host: string, port: number): string {
  if (host === '0.0.0.0') return `http://127.0.0.1:${port}`;
  if (host === '::') return `http://[::1]:${port}`;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
