import { randomBytes, randomUUID } from 'node:crypto';
import { verifyInvariant } from '@once/invariant';
import {
  createEmptyTestDatabase,
  type EmptyTestDatabase,
  type PgBouncer,
  startPgBouncer,
  testAdminUrl,
} from '@once/postgres/testing';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../scripts/system/start-system.ts';
import { type CheckoutOutcome, checkoutUntilAccepted } from './support/payments-client.ts';
import { runEntry } from './support/run-entry.ts';
import { startTestLauncher } from './support/test-launcher.ts';

/**
 * Web, worker and processor, each its own process as `npm run demo` starts them, with their
 * query URLs at a real PgBouncer in transaction mode (Debian's 1.18, 3 server connections per
 * database) and a direct URL for migrations and LISTEN: they serve checkouts end to end, their
 * server connections run with the timeouts, and a SIGKILL of the pooler mid-load costs
 * neither a charge nor an acknowledged payment, and no process.
 */
const POOL_SIZE = 3;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let bouncer: PgBouncer;
let app: EmptyTestDatabase;
let ledger: EmptyTestDatabase;
let system: RunningSystem;
const logLines: string[] = [];
const unexpectedExits: string[] = [];

const databaseName = (database: EmptyTestDatabase) => new URL(database.url).pathname.slice(1);

/** Every payment terminal and succeeded, every webhook delivered, one charge each (the ledger). */
async function expectConvergedExactlyOnce(outcomes: CheckoutOutcome[]): Promise<void> {
  expect(
    outcomes.filter((o) => !o.paymentId).map((o) => o.attempts),
    'every checkout acknowledged',
  ).toEqual([]);
  const ids = outcomes.map((o) => o.paymentId!);
  const appSql = postgres(app.url, { max: 1, onnotice: () => {} });
  const ledgerSql = postgres(ledger.url, { max: 1, onnotice: () => {} });
  try {
    const deadline = Date.now() + 40_000;
    let statuses: string[] = [];
    let undelivered = -1;
    while (Date.now() < deadline) {
      const rows = await appSql<{ status: string }[]>`
        select status from payments where id = any(${ids})`;
      statuses = rows.map((r) => r.status);
      const [row] = await ledgerSql<{ undelivered: number }[]>`
        select count(*)::int as undelivered from webhook_events where delivered_at is null`;
      undelivered = row!.undelivered;
      const converged = statuses.length === ids.length && statuses.every((s) => s === 'succeeded');
      if (converged && !undelivered) break;
      // A delivery whose last UPDATE the pooler's kill cut stays leased for the lease's 2
      // minutes, then is sent again (at least once; the web deduplicates): end those leases
      // now instead of waiting them out.
      if (converged)
        await ledgerSql`update webhook_events set locked_until = null
                        where delivered_at is null and locked_until > now()`;
      await sleep(300);
    }
    expect(
      statuses.filter((s) => s !== 'succeeded'),
      unexpectedExits.join('\n'),
    ).toEqual([]);
    expect(statuses).toHaveLength(ids.length);
    expect(undelivered, 'webhooks left undelivered').toBe(0);
  } finally {
    await appSql.end({ timeout: 1 });
    await ledgerSql.end({ timeout: 1 });
  }
  const report = await verifyInvariant({
    databaseUrl: app.url,
    processorDatabaseUrl: ledger.url,
    converged: true,
    expectedCheckouts: outcomes.map((o) => ({ tenantId: 'tenant_a', idempotencyKey: o.key })),
  });
  expect(report.violations).toEqual([]);
}

/** The server sessions that LISTEN in this test's two databases, by application name. */
async function listeningSessions() {
  const admin = postgres(testAdminUrl(), { max: 1, onnotice: () => {} });
  try {
    return [
      ...(await admin<{ name: string; database: string; pid: number }[]>`
        select application_name as name, datname as database, pid from pg_stat_activity
        where query ilike 'listen %' and datname in (${databaseName(app)}, ${databaseName(ledger)})
        order by 1`),
    ];
  } finally {
    await admin.end({ timeout: 1 });
  }
}

/** Each part still the process it was started as: nothing exited or was restarted. */
function expectNoProcessRestarted(): void {
  expect(unexpectedExits).toEqual([]);
  for (const part of system.supervisor.status()) {
    expect(part, part.name).toMatchObject({ state: 'up', restarts: 0 });
  }
}

describe('web, worker and processor behind PgBouncer in transaction mode', () => {
  beforeAll(async () => {
    bouncer = await startPgBouncer(testAdminUrl(), { poolSize: POOL_SIZE });
    app = await createEmptyTestDatabase('behind_pgbouncer');
    ledger = await createEmptyTestDatabase('behind_pgbouncer_processor');
    system = await startTestLauncher({
      databaseUrl: bouncer.url(databaseName(app)),
      processorDatabaseUrl: bouncer.url(databaseName(ledger)),
      env: {
        DATABASE_POOL_MODE: 'transaction',
        DATABASE_DIRECT_URL: app.url,
        PROCESSOR_DATABASE_POOL_MODE: 'transaction',
        PROCESSOR_DATABASE_DIRECT_URL: ledger.url,
        // Short waits so work cut by the pooler's restart converges within the test.
        WORKER_POLL_INTERVAL_MS: '300',
        WORKER_BACKOFF_BASE_MS: '200',
        WORKER_BACKOFF_MAX_MS: '1500',
        WORKER_RECONCILE_INTERVAL_MS: '1000',
        WORKER_RECONCILE_AFTER_MS: '3000',
        PROCESSOR_IDEMPOTENCY_LEASE_MS: '5000',
        PROCESSOR_WEBHOOK_BACKOFF_MS: '200',
      },
      log: (line) => logLines.push(line),
      onUnexpectedExit: (name, code, reason) =>
        unexpectedExits.push(`${name} exited (${code}): ${reason}`),
    });
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
    await bouncer?.stop();
    await app?.drop();
    await ledger?.drop();
    if (unexpectedExits.length > 0) process.stdout.write(`${logLines.slice(-200).join('\n')}\n`);
  });

  it('serve checkouts end to end: pay over REST, the worker charges, the webhook settles', async () => {
    const deadline = Date.now() + 40_000;
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, () => checkoutUntilAccepted(system.webUrl, randomUUID(), deadline)),
    );
    await expectConvergedExactlyOnce(outcomes);
    expectNoProcessRestarted();
  }, 90_000);

  it('their server connections run with the timeouts, and LISTEN runs on the direct URL', async () => {
    for (const database of [app, ledger]) {
      // More clients at once than server connections: every server connection answers.
      const through = postgres(bouncer.url(databaseName(database)), {
        max: POOL_SIZE * 2,
        prepare: false,
        onnotice: () => {},
      });
      try {
        const answers = await Promise.all(
          Array.from({ length: POOL_SIZE * 2 }, () =>
            through.begin(async (tx) => {
              const [row] = await tx`
                select current_setting('statement_timeout') as statement,
                  current_setting('lock_timeout') as lock,
                  current_setting('idle_in_transaction_session_timeout') as idle,
                  pg_backend_pid() as pid, pg_sleep(0.2)`;
              return row!;
            }),
          ),
        );
        expect(new Set(answers.map((a) => a.pid)).size).toBeLessThanOrEqual(POOL_SIZE);
        for (const { statement, lock, idle } of answers) {
          expect({ statement, lock, idle }).toEqual({ statement: '15s', lock: '5s', idle: '30s' });
        }
      } finally {
        await through.end({ timeout: 1 });
      }
    }
    // The LISTENs are sessions of their own, opened by the apps on the direct URLs (the
    // pooler's restart below leaves them as they are).
    expect(await listeningSessions()).toEqual([
      { name: 'once-processor', database: databaseName(ledger), pid: expect.any(Number) },
      { name: 'once-worker worker-1', database: databaseName(app), pid: expect.any(Number) },
    ]);
  }, 60_000);

  it('a SIGKILL and restart of PgBouncer mid-load: no double charge, no lost payment, no process restarted', async () => {
    const deadline = Date.now() + 45_000;
    const load = Array.from({ length: 12 }, (_, i) =>
      sleep(i * 60).then(() => checkoutUntilAccepted(system.webUrl, randomUUID(), deadline)),
    );
    const listening = await listeningSessions();
    await sleep(250);
    await bouncer.restart(500);
    const outcomes = await Promise.all(load);
    // The pooler really cut checkouts: some were refused (503) and retried with their key.
    expect(outcomes.flatMap((o) => o.attempts).some((a) => a.status !== 201)).toBe(true);
    await expectConvergedExactlyOnce(outcomes);
    expectNoProcessRestarted();
    // Direct sessions outlive the pooler, unless the app replaced its pools (and with them its
    // LISTEN session) after the driver's crash on a dropped connection.
    const after = await listeningSessions();
    for (const [i, part] of ['processor', 'worker-1'].entries()) {
      expect(after[i]?.name).toBe(listening[i]!.name);
      const replaced = logLines.some(
        (l) => l.includes(`${part.padEnd(10)}|`) && l.includes('db.pool_replaced'),
      );
      if (!replaced) expect(after[i]!.pid, `${part}'s LISTEN session`).toBe(listening[i]!.pid);
    }
  }, 120_000);
});

describe('behind a transaction pooler without a direct URL, each app refuses to start in one line', () => {
  const pooled = 'postgres://postgres@127.0.0.1:9/once';
  it.each([
    [
      'web',
      'apps/web/src/process/main.ts',
      {
        DATABASE_URL: pooled,
        DATABASE_POOL_MODE: 'transaction',
        SESSION_SECRET: randomBytes(32).toString('hex'),
        ONCE_ANSWER_KEY: randomBytes(32).toString('hex'),
        ONCE_SEED_DEMO: '0',
      },
      'web: cannot start: DATABASE_DIRECT_URL is not set: with DATABASE_POOL_MODE=transaction, migrations need a direct connection to PostgreSQL; set DATABASE_DIRECT_URL to PostgreSQL itself, not the pooler',
    ],
    [
      'worker',
      'apps/worker/src/runtime/main.ts',
      { DATABASE_URL: pooled, DATABASE_POOL_MODE: 'transaction' },
      'worker: refusing to start: DATABASE_DIRECT_URL is not set: with DATABASE_POOL_MODE=transaction, migrations and the outbox LISTEN need a direct connection to PostgreSQL; set DATABASE_DIRECT_URL to PostgreSQL itself, not the pooler',
    ],
    [
      'processor',
      'apps/processor/src/main.ts',
      {
        PROCESSOR_DATABASE_URL: pooled,
        PROCESSOR_DATABASE_POOL_MODE: 'transaction',
        PROCESSOR_WEBHOOK_SECRET: 'whsec_behind_pgbouncer',
        PROCESSOR_ADMIN_TOKEN: 'behind-pgbouncer-admin',
      },
      "processor: cannot start: PROCESSOR_DATABASE_DIRECT_URL is not set: with PROCESSOR_DATABASE_POOL_MODE=transaction, migrations and the webhook deliverer's LISTEN need a direct connection to PostgreSQL; set PROCESSOR_DATABASE_DIRECT_URL to PostgreSQL itself, not the pooler",
    ],
  ])('%s', async (_name, entry, env, line) => {
    const { code, stderr } = await runEntry(entry, env);
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(line);
  });
});
