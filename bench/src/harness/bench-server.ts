import { findFreePort } from '@once/postgres';
import { startNodeProcess } from './server-process.ts';

/** The bench HTTP server (every variant's route) running in its own process. */
export interface BenchServer {
  readonly url: string;
  /** CPU time (user + system, ms) the server process has used so far. */
  cpuMs(): Promise<number>;
  stop(): Promise<void>;
}

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

/**
 * One bench server per variant, `each[i]` for variant i, so that each variant's server CPU is
 * read from a process that served nothing else (no other route's garbage, JIT or heap).
 */
export async function startBenchServerPerVariant(
  count: number,
  options: Parameters<typeof startBenchServer>[0],
): Promise<{ each: BenchServer[]; stop(): Promise<void> }> {
  const each: BenchServer[] = [];
  const stop = async () => {
    await Promise.all(each.map((server) => server.stop()));
  };
  try {
    for (let i = 0; i < count; i++) each.push(await startBenchServer(options));
  } catch (error) {
    await stop();
    throw error;
  }
  return { each, stop };
}
