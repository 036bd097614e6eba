import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const tsx = `${repoRoot}node_modules/.bin/tsx`;

/** A port free right now (the OS picks it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface RunningProcessor {
  url: string;
  output: string[];
  /** SIGTERM to the process group; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Runs the mock processor (`apps/processor/src/main.ts`) as a real OS process in its own
 * process group, over its own database, and waits for `GET /healthz`. Only the process is
 * used, never its code: the API must talk to it as to a third party, over HTTP.
 */
export async function spawnProcessor(processorDatabaseUrl: string): Promise<RunningProcessor> {
  const port = await freePort();
  const child: ChildProcess = spawn(tsx, ['apps/processor/src/main.ts'], {
    cwd: repoRoot,
    env: {
      ...process.env,
      PORT: String(port),
      PROCESSOR_DATABASE_URL: processorDatabaseUrl,
      // Nobody listens there: deliveries fail and are retried, which this test ignores.
      PROCESSOR_WEBHOOK_URL: 'http://127.0.0.1:9/webhooks',
      PROCESSOR_ADMIN_TOKEN: 'once-admin',
      FORCE_COLOR: '0',
    },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const collect = (chunk: Buffer) => output.push(...chunk.toString().split('\n').filter(Boolean));
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`processor exited early:\n${output.join('\n')}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      process.kill(-child.pid!, 'SIGKILL');
      throw new Error(`processor did not start:\n${output.join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    output,
    async stop() {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // Already gone.
      }
      return exited;
    },
  };
}
