import { type ServerType, serve } from '@hono/node-server';
import type { ProcessorConfig } from './config.ts';
import { createProcessorDatabase } from './db/client.ts';
import { runProcessorMigrations } from './db/migrate.ts';
import { seedAccounts } from './db/seed-accounts.ts';
import { untilDatabaseAnswers } from './db/wait-for-database.ts';
import { createProcessorApp } from './http/processor-app.ts';
import { startAuthorizationExpiry } from './maintenance/authorization-expiry.ts';
import { startIdempotencyReaper } from './maintenance/idempotency-reaper.ts';
import { startRefundSettlement } from './maintenance/refund-settlement.ts';
import { createStripeIdempotency } from './stripe/stripe-idempotency.ts';
import { startWebhookDeliverer } from './webhooks/webhook-deliverer.ts';

export interface RunningProcessor {
  /** Base URL on this machine, e.g. http://127.0.0.1:4100 (also when listening on 0.0.0.0). */
  url: string;
  port: number;
  /** Swaps the database pool for a fresh one (after the postgres.js null-socket crash). */
  replaceDatabasePool(reason: string): void;
  /** Stops accepting connections, finishes in-flight requests and deliveries, closes the pool. */
  stop(): Promise<void>;
}

/**
 * Migrates and seeds the demo accounts (waiting out a database that is starting up), then
 * serves on `host` (127.0.0.1 when a test leaves it out; port 0 picks a free port).
 */
export async function startProcessor(
  config: Omit<ProcessorConfig, 'host' | 'databasePoolMode' | 'databaseDirectUrl'> &
    Partial<Pick<ProcessorConfig, 'host' | 'databasePoolMode' | 'databaseDirectUrl'>> & {
      log: (line: string) => void;
    },
): Promise<RunningProcessor> {
  const { log } = config;
  const host = config.host ?? '127.0.0.1';
  // A PostgreSQL restarting as the processor starts (57P03, a refused connection) is waited
  // out here; only a configuration error reaches the caller at once.
  const { databasePoolMode: poolMode, databaseDirectUrl: directUrl = config.databaseUrl } = config;
  await untilDatabaseAnswers(() => runProcessorMigrations(directUrl, poolMode), {
    log,
    what: 'migrations',
  });
  const client = createProcessorDatabase(
    config.databaseUrl,
    (event, fields) => log(`${event} ${JSON.stringify(fields ?? {})}`),
    // Through a transaction pooler a LISTEN would hear nothing: it goes to PostgreSQL itself.
    { poolMode, listenUrl: poolMode === 'transaction' ? directUrl : undefined },
  );
  await untilDatabaseAnswers(() => seedAccounts(client.db), { log, what: 'seed' }).catch(
    async (error: unknown) => {
      await client.close();
      throw error;
    },
  );
  const timing = {
    authorizationWindowMs: config.authorizationWindowMs,
    refundSettleMs: config.refundSettleMs,
  };

  const app = createProcessorApp({
    db: client.db,
    idempotentMutation: createStripeIdempotency(client.db, {
      leaseMs: config.idempotencyLeaseMs,
      ttlMs: config.idempotencyRetentionMs,
    }),
    adminToken: config.adminToken,
    webhook: { url: config.webhookUrl, secret: config.webhookSecret },
    timing,
    publicUrl: config.publicUrl,
    log,
  });
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: config.port, hostname: host }, () => resolve(s));
    // EADDRINUSE, EADDRNOTAVAIL (an address this machine does not have): fail the start.
    s.once('error', (error) =>
      reject(new Error(`cannot listen on ${host}:${config.port}: ${error.message}`)),
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
  const reaper = startIdempotencyReaper(client.db, log, config.idempotencyReapIntervalMs);
  const expiry = startAuthorizationExpiry(client.db, log, timing.authorizationWindowMs);
  const settlement = startRefundSettlement(client.db, log, timing.refundSettleMs);
  log(`processor listening on ${listeningOn(host, port)} (webhooks -> ${config.webhookUrl})`);

  return {
    url: `http://${localHostFor(host)}:${port}`,
    port,
    replaceDatabasePool: (reason) => client.replace(reason),
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive sockets would hold close() open; in-flight requests still finish.
        if ('closeIdleConnections' in server) server.closeIdleConnections();
      });
      reaper.stop();
      expiry.stop();
      settlement.stop();
      await deliverer.stop();
      await client.close();
    },
  };
}

/** Where a client on this machine reaches a server bound to `host` (wildcards: loopback). */
function localHostFor(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

function listeningOn(host: string, port: number): string {
  const address = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return host === '0.0.0.0' || host === '::' ? `${address} (every interface)` : address;
}
