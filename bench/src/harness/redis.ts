import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { findFreePort } from '@once/postgres';

/** A throw-away Redis without persistence, as the peers are commonly deployed for caches. */
export interface BenchRedis {
  readonly url: string;
  readonly version: string;
  /** Kill and start again on the same port: everything in memory is gone. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const REDIS_SERVER = '/usr/bin/redis-server';

/** How to get redis-server when it is missing (the peer scenario is skipped). */
export const REDIS_INSTALL_HINT =
  'redis-server not found; install it with `apt-get install -y redis-server`';

export function redisAvailable(): boolean {
  return existsSync(REDIS_SERVER);
}

/**
 * Starts `redis-server --save '' --appendonly no` on a free port.
 *
 * @example
 * const redis = await startBenchRedis(); // redis.url = 'redis://127.0.0.1:2xxxx'
 */
export async function startBenchRedis(): Promise<BenchRedis> {
  const port = await findFreePort();
  let child = await startServer(port);
  const version = child.version;
  return {
    url: `redis://127.0.0.1:${port}`,
    version,
    async restart() {
      await stopServer(child.process);
      child = await startServer(port);
    },
    stop: () => stopServer(child.process),
  };
}

async function startServer(port: number): Promise<{ process: ChildProcess; version: string }> {
  const child = spawn(
    REDIS_SERVER,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'no',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
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
