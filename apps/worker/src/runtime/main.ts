// The worker process: outbox dispatcher, reconciler, idempotency-key sweeper and reaper,
// and /healthz. Several may run against one database; they coordinate only through it.
import type { Server } from 'node:http';
import { createReplaceableDatabaseClient, runMigrations } from '@once/db';
import { createIdempotency } from '@once/idempotency';
import { createDrizzleStore, reapExpiredKeys, sweepExpiredLeases } from '@once/idempotency/drizzle';
import { installDatabaseCrashPolicy } from '@once/postgres';
import { createProcessorClients } from '../processor/processor-client.ts';
import { reconcilePayments } from '../reconcile/reconcile-payments.ts';
import { requeueUnansweredMoneyMoves } from '../reconcile/requeue-unanswered.ts';
import { backfillWebhookEvents } from '../webhooks/backfill-webhook-events.ts';
import { startDispatcher } from './dispatcher.ts';
import { startHealthServer } from './health-server.ts';
import { createLogger } from './logger.ts';
import { withDatabaseRetry } from './transient-database-error.ts';
import { readWorkerConfig } from './worker-config.ts';

// A configuration that breaks a window's inequality is refused in one line, not a stack trace.
let config: ReturnType<typeof readWorkerConfig>;
try {
  config = readWorkerConfig();
} catch (error) {
  console.error(
    `worker: refusing to start: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
}
const log = createLogger(config.workerId);

// Signal handlers first: a SIGTERM while migrations wait for PostgreSQL (or anywhere before
// the loops run) must still exit 0, not kill the process by the signal's default action.
// Nothing is in flight yet then; an interrupted migration is rolled back by the server.
let shutdown: ((signal: string) => Promise<void>) | undefined;
function onStopSignal(signal: string): void {
  if (shutdown) {
    void shutdown(signal);
    return;
  }
  log('worker.stopped', { signal, during: 'startup' });
  process.exit(0);
}
process.on('SIGTERM', () => onStopSignal('SIGTERM'));
process.on('SIGINT', () => onStopSignal('SIGINT'));

// Retried: in the demo the worker may start before PostgreSQL accepts connections.
await withDatabaseRetry(
  () => runMigrations(config.databaseDirectUrl, { poolMode: config.databasePoolMode }),
  { log, what: 'migrations', attempts: 20, baseDelayMs: 250 },
);

// Replaceable: swapped after the postgres.js 3.4.9 null-socket crash (see installDatabaseCrashPolicy below).
const database = createReplaceableDatabaseClient(
  config.databaseUrl,
  {
    applicationName: `once-worker ${config.workerId}`,
    max: config.concurrency + 4,
    poolMode: config.databasePoolMode,
    // Through a transaction pooler a LISTEN would hear nothing: it goes to PostgreSQL itself.
    listenUrl: config.databasePoolMode === 'transaction' ? config.databaseDirectUrl : undefined,
  },
  log,
);
const onDatabaseHang = () => database.replace('a transaction hung client-side');
const processorFor = createProcessorClients({
  processorUrl: config.processorUrl,
  timeoutMs: config.processorTimeoutMs,
});

const dispatcher = startDispatcher({
  sql: database.sql,
  workerId: config.workerId,
  concurrency: config.concurrency,
  pollIntervalMs: config.pollIntervalMs,
  listen: config.outboxNotify,
  leaseMs: config.leaseMs,
  backoff: { baseMs: config.backoffBaseMs, maxMs: config.backoffMaxMs },
  processorFor,
  log,
  onDatabaseHang,
  returnUrl: config.checkoutReturnUrl,
});

// Payments the reconciler could not decide after many checks (see /healthz).
let stuckPayments = 0;
const reconciler = startPeriodicTask('reconciler', config.reconcileIntervalMs, async () => {
  const summary = await reconcilePayments({
    sql: database.sql,
    processorFor,
    log,
    olderThanMs: config.reconcileAfterMs,
    maxRequeues: config.reconcileMaxRequeues,
    recheckBackoff: {
      baseMs: config.reconcileBackoffBaseMs,
      maxMs: config.reconcileBackoffMaxMs,
    },
    stuckAfterChecks: config.reconcileStuckAfterChecks,
    notify: config.outboxNotify,
    challengeAbandonAfterMs: config.challengeAbandonAfterMs,
  });
  stuckPayments = summary.stuck;
  if (summary.examined > 0) log('reconciler.pass', { ...summary });
  const requeued = await requeueUnansweredMoneyMoves(database.sql, {
    olderThanMs: config.reconcileAfterMs,
    notify: config.outboxNotify,
  });
  if (requeued > 0) log('reconciler.requeued_unanswered', { captures_voids_refunds: requeued });
});

// Webhooks the app missed (endpoint down, answered 503): applied from the processor's list,
// recorded once per event id in the same key store as the web's deliveries.
const webhookEvents = {
  db: database.db,
  idempotencyEngine: createIdempotency({
    store: createDrizzleStore(database.db, { encryption: config.answerEncryption }),
  }),
};
const webhookBackfill = startPeriodicTask(
  'webhook_backfill',
  config.webhookBackfillIntervalMs,
  async () => {
    const summary = await backfillWebhookEvents({ store: webhookEvents, processorFor, log });
    if (summary.applied + summary.left > 0) log('webhook_backfill.pass', { ...summary });
  },
);

// Idempotency keys whose request died mid-flight are released (no phase committed: the
// client's retry may run again) or marked `unknown`, so a retry is not answered 409 forever;
// keys past their retention are deleted in small batches. Outbox jobs need no sweeper: the
// claim query takes over expired job leases.
const keyUpkeep = (what: string) => ({ log, what, attempts: 3, onHang: onDatabaseHang });
const keySweeper = startPeriodicTask('key_sweeper', config.sweepIntervalMs, async () => {
  const swept = await withDatabaseRetry(
    () => sweepExpiredLeases(database.db),
    keyUpkeep('key_sweeper'),
  );
  if (swept.released + swept.markedUnknown > 0) log('key_sweeper.swept', { ...swept });
});
const keyReaper = startPeriodicTask('key_reaper', config.reapIntervalMs, async () => {
  const reaped = await withDatabaseRetry(
    () => reapExpiredKeys(database.db),
    keyUpkeep('key_reaper'),
  );
  if (reaped.deleted > 0) log('key_reaper.reaped', { ...reaped });
});

// From here on a stop signal drains the loops: they run as soon as they are created.
let health: Server | null = null;
let shuttingDown = false;
shutdown = async (signal: string): Promise<void> => {
  if (shuttingDown) return;
  shuttingDown = true;
  log('worker.stopping', { signal });
  await dispatcher.stop(config.shutdownGraceMs);
  await Promise.all([reconciler, webhookBackfill, keySweeper, keyReaper].map((t) => t.stop()));
  health?.close();
  await database.close();
  log('worker.stopped');
  process.exit(0);
};

health =
  config.healthPort === 0
    ? null
    : await startHealthServer(
        config.healthPort,
        () => ({
          workerId: config.workerId,
          inFlight: dispatcher.inFlight(),
          stuckPayments,
        }),
        config.healthHost,
      );

log('worker.started', {
  processor: config.processorUrl,
  health: config.healthPort || 'disabled',
  concurrency: config.concurrency,
  leaseMs: config.leaseMs,
});

installDatabaseCrashPolicy({
  // A driver bug on a connection that just died: swap the pool, keep working.
  replacePool(reason) {
    try {
      database.replace(reason);
    } catch (replaceError) {
      log('db.pool_replace_failed', { error: String(replaceError) });
    }
  },
  // Anything else is a bug in this program: die loudly; leases make the work re-claimable.
  onUncaughtBug(error) {
    log('worker.crashed', { error: error.stack ?? String(error) });
    process.exit(1);
  },
  // postgres.js surfaces a connection killed between queries (pg_terminate_backend, a
  // restart) as an error on whoever uses it next; anything that still escapes is logged
  // rather than allowed to end the process, because every piece of work is re-claimable.
  onUnhandledRejection(reason) {
    log('worker.unhandled_rejection', { error: String(reason) });
  },
});

/**
 * Runs `run` now and then every `intervalMs` after each run ends (never two at once). A
 * failed run is logged and the next one happens on schedule: a database outage must not
 * end the reaper or the reconciler. `stop` resolves when the run in progress has finished.
 */
function startPeriodicTask(name: string, intervalMs: number, run: () => Promise<unknown>) {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  const tick = () => {
    current = run()
      .then(
        () => {},
        (error: unknown) => log(`${name}.failed`, { error: String(error) }),
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}
