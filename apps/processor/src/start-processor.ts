import { setTimeout as sleep } from 'node:timers/promises';
import { type ServerType, serve } from '@hono/node-server';
import { exponentialDelayMs } from '@once/backoff';
import { reapExpiredKeys } from '@once/idempotency/drizzle';
import { errorCodes, isTransientDatabaseError } from '@once/postgres';
import type { ProcessorConfig } from './config.ts';
import { createProcessorDatabase, runProcessorMigrations } from './db/client.ts';
import { accounts } from './db/schema/index.ts';
import { createProcessorApp } from './http/processor-app.ts';
import { startPeriodicSweep } from './maintenance/periodic-sweep.ts';
import { expireAuthorizations } from './payments/cancel-payment-intent.ts';
import { settleRefunds } from './refunds/refunds.ts';
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
  // The two merchant accounts every environment has (docs/process-contract.md); a restart adds none.
  const seed = async () => {
    await client.db
      .insert(accounts)
      .values([
        { id: 'acct_tenant_a', secretKey: 'sk_test_tenant_a' },
        { id: 'acct_tenant_b', secretKey: 'sk_test_tenant_b' },
      ])
      .onConflictDoNothing();
  };
  await untilDatabaseAnswers(seed, { log, what: 'seed' }).catch(async (error: unknown) => {
    await client.close();
    throw error;
  });
  const { authorizationWindowMs, refundSettleMs } = config;
  const timing = { authorizationWindowMs, refundSettleMs };

  const webhook = { url: config.webhookUrl, secret: config.webhookSecret };
  const app = createProcessorApp({
    db: client.db,
    idempotentMutation: createStripeIdempotency(client.db, {
      leaseMs: config.idempotencyLeaseMs,
      ttlMs: config.idempotencyRetentionMs,
    }),
    adminToken: config.adminToken,
    webhook,
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
    target: webhook,
    backoffMs: config.webhookBackoffMs,
    log,
  });
  // Each sweep runs often enough that a due change shows late by a fraction of its window.
  const quarter = (ms: number, most: number) => Math.min(most, Math.max(100, Math.floor(ms / 4)));
  const sweeps = [
    startPeriodicSweep({
      name: 'idempotency',
      intervalMs: config.idempotencyReapIntervalMs,
      log,
      pass: () => reapExpiredKeys(client.db),
      describe: ({ deleted }) => (deleted > 0 ? `reaped ${deleted} expired keys` : undefined),
    }),
    startPeriodicSweep({
      name: 'authorizations',
      intervalMs: quarter(timing.authorizationWindowMs, 60_000),
      log,
      pass: () => expireAuthorizations(client.db),
      describe: (n) => (n > 0 ? `${n} expired (canceled)` : undefined),
    }),
    startPeriodicSweep({
      name: 'refunds',
      intervalMs: quarter(timing.refundSettleMs, 10_000),
      log,
      pass: () => settleRefunds(client.db),
      describe: (n) => (n > 0 ? `${n} settled` : undefined),
    }),
  ];
  const shown = host.includes(':') ? `[${host}]` : host;
  const everywhere = host === '0.0.0.0' || host === '::' ? ' (every interface)' : '';
  log(
    `processor listening on http://${shown}:${port}${everywhere} (webhooks -> ${config.webhookUrl})`,
  );

  return {
    // A wildcard bind is reached on loopback.
    url: `http://${{ '0.0.0.0': '127.0.0.1', '::': '[::1]' }[host] ?? shown}:${port}`,
    port,
    replaceDatabasePool: (reason) => client.replace(reason),
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive sockets would hold close() open; in-flight requests still finish.
        if ('closeIdleConnections' in server) server.closeIdleConnections();
      });
      for (const sweep of sweeps) sweep.stop();
      await deliverer.stop();
      await client.close();
    },
  };
}

/**
 * Runs `work` again after a transient database error (a restarting PostgreSQL answers 57P03
 * for a while), with capped backoff (20 tries, about 80 s); a configuration error is thrown at once.
 */
async function untilDatabaseAnswers<T>(
  work: () => Promise<T>,
  options: { log: (line: string) => void; what: string },
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!isTransientDatabaseError(error) || attempt >= 20) throw error;
      const delayMs = exponentialDelayMs(attempt, { baseMs: 250, maxMs: 5_000 });
      options.log(
        `processor.start.db_wait ${JSON.stringify({
          what: options.what,
          attempt,
          code: errorCodes(error)[0],
          error: error instanceof Error ? error.message : String(error),
          delayMs,
        })}`,
      );
      await sleep(delayMs);
    }
  }
}
