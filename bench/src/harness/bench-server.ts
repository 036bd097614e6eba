import { findFreePort } from '@once/db/embedded-postgres';
import { startNodeProcess } from './server-process.ts';

/** The bench HTTP server (all variants' routes) running in its own process. */
export interface BenchServer {
  readonly url: string;
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
}): Promise<BenchServer> {
  const port = await findFreePort();
  const child = await startNodeProcess({
    name: 'bench-server',
    script: 'bench/src/servers/main.ts',
    env: {
      PORT: String(port),
      DATABASE_URL: options.databaseUrl,
      DB_POOL_MAX: String(options.poolMax ?? 20),
      ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
    },
    ready: /^listening \d+/,
  });
  return { url: `http://127.0.0.1:${port}`, stop: () => child.stop() };
}
