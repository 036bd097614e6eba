import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { findFreePort } from '@once/postgres';

/** A throw-away Redis without persistence, as the peers are commonly deployed for caches. */
export interface BenchRedis {
  readonly url: string;
  readonly version: string;
  /** Kill and start again on the same port: everything in memory is gone. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The redis-server binary: `REDIS_SERVER` when set, else the first `redis-server` on PATH or in
 * the usual system directories; undefined when there is none.
 */
function findRedisServer(): string | undefined {
  const { REDIS_SERVER, PATH = '' } = process.env;
  if (REDIS_SERVER) return existsSync(REDIS_SERVER) ? REDIS_SERVER : undefined;
  return [...PATH.split(path.delimiter), '/usr/bin', '/usr/local/bin', '/usr/sbin']
    .filter(Boolean)
    .map((dir) => path.join(dir, 'redis-server'))
    .find((file) => existsSync(file));
}

/** The one command that makes the peers scenario run, printed when redis-server is missing. */
export const REDIS_INSTALL_HINT =
  'peers scenario skipped: redis-server not found. Install it with `sudo apt-get install -y redis-server` ' +
  '(Debian/Ubuntu; or set REDIS_SERVER=/path/to/redis-server), then run `npm run bench -- --only peers`.';

export function redisAvailable(): boolean {
  return findRedisServer() !== undefined;
}

/** Starts `redis-server --save '' --appendonly no` on a free port. */
export async function startBenchRedis(): Promise<BenchRedis> {
  const port = await findFreePort();
  let child = await startServer(port);
  return {
    url: `redis://127.0.0.1:${port}`,
    version: child.version,
    async restart() {
      await stopServer(child.process);
      child = await startServer(port);
    },
    stop: () => stopServer(child.process),
  };
}

async function startServer(port: number): Promise<{ process: ChildProcess; version: string }> {
  const binary = findRedisServer();
  if (!binary) throw new Error(REDIS_INSTALL_HINT);
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', ''];
  const child = spawn(binary, [...args, '--appendonly', 'no', '--protected-mode', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const version = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`redis-server did not start:\n${output}`)),
      10_000,
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve(
          /v=([\d.]+)/.exec(output)?.[1] ?? /Redis version=([\d.]+)/.exec(output)?.[1] ?? 'unknown',
        );
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited (${code}):\n${output}`));
    });
  });
  return { process: child, version };
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // SIGKILL: a crash, not a graceful shutdown (with --save '' nothing would be saved anyway).
  child.kill('SIGKILL');
  await exited;
}
