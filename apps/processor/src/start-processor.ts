import { type ServerType, serve } from '@hono/node-server';
import {
  DEFAULT_IDEMPOTENCY_REAP_INTERVAL_MS,
  DEFAULT_IDEMPOTENCY_RETENTION_MS,
  type ProcessorConfig,
} from './config.ts';
import { createProcessorDatabase } from './db/client.ts';
import { runProcessorMigrations } from './db/migrate.ts';
import { seedAccounts } from './db/seed-accounts.ts';
import { createProcessorApp } from './http/processor-app.ts';
import { createStripeIdempotency } from './http/stripe-idempotency.ts';
import { startIdempotencyReaper } from './maintenance/idempotency-reaper.ts';
import { startWebhookDeliverer } from './webhooks/webhook-deliverer.ts';

export interface RunningProcessor {
  /** Base URL, e.g. http://127.0.0.1:4100 */
  url: string;
  port: number;
  /** Swaps the database pool for a fresh one (after the postgres.js null-socket crash). */
  replaceDatabasePool(reason: string): void;
  /** Stops accepting connections, finishes in-flight requests and deliveries, closes the pool. */
  stop(): Promise<void>;
}

/**
 * Migrates (advisory-locked), seeds the two demo accounts, and serves the processor.
 * Port 0 picks a free port (tests).
 *
 * @example
 * const processor = await startProcessor({ ...readProcessorConfig(process.env), log: console.log });
 */
export async function startProcessor(
  config: ProcessorConfig & { log: (line: string) => void; host?: string },
): Promise<RunningProcessor> {
  const { log } = config;
  await runProcessorMigrations(config.databaseUrl);
  const client = createProcessorDatabase(config.databaseUrl, (event, fields) =>
    log(`${event} ${JSON.stringify(fields ?? {})}`),
  );
  await seedAccounts(client.db);

  const app = createProcessorApp({
    db: client.db,
    idempotentMutation: createStripeIdempotency(client.db, {
      leaseMs: config.idempotencyLeaseMs,
      ttlMs: config.idempotencyRetentionMs ?? DEFAULT_IDEMPOTENCY_RETENTION_MS,
    }),
    adminToken: config.adminToken,
    log,
  });
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve(
      { fetch: app.fetch, port: config.port, hostname: config.host ?? '127.0.0.1' },
      () => resolve(s),
    );
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const deliverer = startWebhookDeliverer({
    db: client.db,
    sql: client.sql,
    url: config.webhookUrl,
    secret: config.webhookSecret,
    backoffMs: config.webhookBackoffMs,
    log,
  });
  const reaper = startIdempotencyReaper(
    client.db,
    log,
    config.idempotencyReapIntervalMs ?? DEFAULT_IDEMPOTENCY_REAP_INTERVAL_MS,
  );
  log(`processor listening on http://127.0.0.1:${port} (webhooks -> ${config.webhookUrl})`);

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    replaceDatabasePool: (reason) => client.replace(reason),
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive sockets would hold close() open; in-flight requests still finish.
        if ('closeIdleConnections' in server) server.closeIdleConnections();
      });
      reaper.stop();
      await deliverer.stop();
      await client.close();
    },
  };
}
