import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startWebRuntime } from '../runtime.ts';
import { type ServedHandler, serveFetch } from './serve-fetch.ts';
import { webApiRoutes } from './web-routes.ts';

/** The line a started child prints, then its URL. */
const LISTENING = 'web test process listening on ';
const thisFile = fileURLToPath(import.meta.url);

/**
 * Another web process (`node --import tsx`) with the API routes of `startWebTestServer` over the
 * database at `databaseUrl` (already migrated) and `env`: nothing it keeps in memory is shared
 * with the caller's process, as between the webs behind a load balancer. It exits when closed
 * or when the caller's process goes (its stdin ends).
 */
export async function startWebTestProcess(
  databaseUrl: string,
  env: Record<string, string>,
): Promise<ServedHandler> {
  const child = spawn(process.execPath, ['--import', 'tsx', thisFile], {
    env: {
      // As the test's own web runs (vitest sets it).
      NODE_ENV: 'test',
      PATH: process.env.PATH ?? '',
      // The workspaces' export condition, as the tests resolve them.
      NODE_OPTIONS: process.env.NODE_OPTIONS ?? '',
      ...env,
      DATABASE_URL: databaseUrl,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    const onLine = (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) {
        tail.push(line);
        if (tail.length > 40) tail.shift();
        if (line.startsWith(LISTENING)) resolve(line.slice(LISTENING.length));
      }
    };
    child.stdout?.setEncoding('utf8').on('data', onLine);
    child.stderr?.setEncoding('utf8').on('data', onLine);
    child.once('exit', (code) => {
      const said = `web test process exited (${code}):\n${tail.join('\n')}`;
      reject(new Error(said));
      // One that dies mid-test says why; its requests fail on their own.
      console.error(said);
    });
  });
  return { url, close: () => stop(child) };
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  child.removeAllListeners('exit');
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.stdin?.end();
  });
}

/** The child: serve until stdin ends, then close the pool and exit. */
async function serveAsChild(): Promise<void> {
  // Logged, not fatal, as Next's server does for the production web: postgres.js may reject a
  // replaced pool's destroyed connection with nobody listening.
  process.on('unhandledRejection', (reason) => console.error('web: unhandled rejection', reason));
  const runtime = await startWebRuntime(process.env);
  const server = await serveFetch(webApiRoutes(async () => runtime));
  process.stdin.resume().on('end', async () => {
    await server.close();
    await runtime.client.close();
    process.exit(0);
  });
  console.log(`${LISTENING}${server.url}`);
}

if (process.argv[1] === thisFile) await serveAsChild();
