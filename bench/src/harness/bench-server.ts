import { findFreePort } from '@once/postgres';
import { startNodeProcess } from './server-process.ts';

/** The bench HTTP server (all variants' routes) running in its own process. */
export interface BenchServer {
  readonly url: string;
  /** CPU time (user + system, ms) the server process has used so far. */
  cpuMs(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * @example
 * const server = await startBenchServer({ databaseUrl: pg.url });
 * await runLoad({ url: server.url, path: '/trpc/pay.guarded', ... });
 */
export async function startBenchServer(options: {
  databaseUrl: string;
  redisUrl?: string;
  poolMax?: number;
  /** Extra node flags for the server process (the profiler passes `--cpu-prof` here). */
  nodeArgs?: string[];
}): Promise<BenchServer> {
  const port = await findFreePort();
  const child = await startNodeProcess({
    name: 'bench-server',
    script: 'bench/src/servers/main.ts',
    nodeArgs: options.nodeArgs,
    env: {
      PORT: String(port),
      DATABASE_URL: options.databaseUrl,
      DB_POOL_MAX: String(options.poolMax ?? 20),
      ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
    },
    ready: /^listening \d+/,
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    cpuMs: async () => ((await (await fetch(`${url}/_cpu`)).json()) as { ms: number }).ms,
    stop: () => child.stop(),
  };
}
