// The failover drill through the real apps on the cluster's multi-host URL (the processor on
// its own PostgreSQL): checkout clients retry their Idempotency-Key until a definite answer
// while the primary fails; afterwards every acknowledged payment must be on the new primary
// and the processor's ledger must hold one charge per checkout (packages/invariant).

import { setTimeout as sleep } from 'node:timers/promises';
import { createDatabaseClient, runMigrations } from '@once/db';
import { verifyInvariant } from '@once/invariant';
import { spawnEmbeddedPostgres } from '@once/postgres/embedded';
import postgres from 'postgres';
import { checkoutUntilAccepted } from '../../test/support/payments-client.ts';
import { startTestSystem } from '../../test/support/test-system.ts';
import type { HaCluster, HaNodeName } from './cluster.ts';
import { FAILURES, type Failure, retried } from './drill.ts';

/** Until the worker has settled every payment (nothing processing/unknown). */
async function waitConverged(sql: postgres.Sql): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const [row] = await retried(
      () =>
        sql<{ open: number }[]>`select count(*)::int as open from payments
          where status in ('processing', 'unknown')`,
    );
    if (row?.open === 0) return;
    await sleep(1_000);
  }
}

export interface AppDrillOutcome {
  acknowledged: number;
  /** Acknowledged (201/200) payments absent from the new primary. */
  lost: number;
  /** Clients with no definite answer before the deadline. */
  unanswered: number;
  /** Keys whose retry after the heal made a new payment (its first one was lost). */
  recreated: number;
  /** COMMITs terminated while they waited for the synchronous standby. */
  terminatedWaits: number;
  /** The invariant checker's violations (double charges among them). */
  violations: string[];
}

/** The failures a round runs, in this order. */
type AppDrillFault = 'kill -9' | 'switchover' | 'SIGSTOP' | 'terminated COMMIT waits';

interface AppDrillOptions {
  rounds?: number;
  seed?: number;
  /** Default: all four; a shorter run (npm test's) picks some. */
  faults?: readonly AppDrillFault[];
}

export async function runAppDrill(
  cluster: HaCluster,
  log: (line: string) => void,
  {
    rounds = 1,
    seed = 1,
    faults = ['kill -9', 'switchover', 'SIGSTOP', 'terminated COMMIT waits'],
  }: AppDrillOptions = {},
): Promise<AppDrillOutcome> {
  const url = cluster.url('once');
  await retried(() => runMigrations(url));
  const processorPg = await spawnEmbeddedPostgres({ durability: 'fast' });
  // The processor's database is created on its own PostgreSQL, not on the cluster.
  process.env.ONCE_TEST_ADMIN_URL = processorPg.adminUrl;
  const system = await startTestSystem({
    label: `ha_app_${seed}`,
    webhookSecret: 'whsec_ha_drill',
    app: {
      url,
      adminUrl: url,
      client: createDatabaseClient(url, { applicationName: 'ha-app-drill' }),
      drop: async () => {},
    },
  });
  await system.startWorker('ha-w-1');
  log(`apps up: web ${system.web.url}, processor ${system.processor.url}, one worker`);

  const acknowledged: { key: string; paymentId: string }[] = [];
  const keys: string[] = [];
  let unanswered = 0;
  let terminatedWaits = 0;
  let sending = true;
  let next = 0;
  const clients = [1, 2, 3, 4].map(async () => {
    while (sending) {
      const key = `ha-${seed}-${++next}`;
      keys.push(key);
      const outcome = await checkoutUntilAccepted(system.web.url, key, Date.now() + 180_000);
      if (outcome.paymentId) acknowledged.push({ key, paymentId: outcome.paymentId });
      else unanswered++;
    }
  });

  const failures: Record<AppDrillFault, Failure> = {
    ...FAILURES,
    // The primary cut off from its standbys while its clients still reach it: their COMMITs
    // commit locally and wait for the synchronous standby. Their backends are terminated (what
    // a fast shutdown does to them), then the primary dies: the standby that takes over never
    // had those commits. An app that answered a terminated COMMIT as done lost a payment it
    // acknowledged; one that answered "outcome unknown" has clients that retry on the new
    // primary.
    'terminated COMMIT waits': {
      act: async (_, leader) => {
        cluster.partitionNode(leader);
        const terminated = await terminateSyncWaits(cluster, leader);
        terminatedWaits += terminated;
        log(`terminated ${terminated} COMMIT waits on ${leader}`);
        cluster.killNode(leader);
      },
      rejoins: true,
    },
  };
  const failover = async (fault: AppDrillFault) => {
    await cluster.waitForHealthy(180_000);
    const from = await cluster.waitForLeader(30_000);
    await sleep(1_000 + ((seed * 7919 + acknowledged.length) % 3_000));
    await failures[fault].act(cluster, from);
    const to = await cluster.waitForLeader(120_000, from);
    log(`${fault}: ${from} -> ${to}, ${acknowledged.length} acknowledged so far`);
    if (failures[fault].rejoins) cluster.startNode(from);
  };
  try {
    for (let round = 0; round < rounds; round++) {
      for (const fault of faults) await failover(fault);
    }
    await cluster.waitForHealthy(180_000);
  } finally {
    sending = false;
    await Promise.all(clients);
  }

  const sql = postgres(url, { max: 1, connect_timeout: 3, onnotice: () => {} });
  await waitConverged(sql);
  const present = new Set(
    (await retried(() => sql<{ id: string }[]>`select id from payments`)).map((r) => r.id),
  );
  const lost = acknowledged.filter((a) => !present.has(a.paymentId)).length;
  // Every shopper retries once after the heal: a payment lost with its key is made again, and
  // its downstream key must make the processor find the first charge instead of a second one.
  let recreated = 0;
  for (const a of acknowledged) {
    const again = await checkoutUntilAccepted(system.web.url, a.key, Date.now() + 60_000);
    if (again.paymentId !== a.paymentId) recreated++;
  }
  await waitConverged(sql);
  await sql.end({ timeout: 1 });
  const report = await verifyInvariant({
    databaseUrl: url,
    processorDatabaseUrl: system.processorDatabaseUrl,
    converged: true,
    expectedCheckouts: acknowledged.map((a) => ({ tenantId: 'tenant_a', idempotencyKey: a.key })),
  });
  await system.close();
  await processorPg.stop();
  return {
    acknowledged: acknowledged.length,
    lost,
    unanswered,
    recreated,
    terminatedWaits,
    violations: report.violations.map((v) => `${v.kind} ${v.paymentId ?? ''} ${v.detail}`),
  };
}

/**
 * Terminates every client backend of `leader` waiting for its synchronous standby, once some
 * are (traffic keeps arriving: up to 15 s); how many. Each such COMMIT is committed on
 * `leader` and on no standby; its client sees a lost connection.
 */
async function terminateSyncWaits(cluster: HaCluster, leader: HaNodeName): Promise<number> {
  const waiting = `select pid from pg_stat_activity
    where wait_event = 'SyncRep' and backend_type = 'client backend'`;
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    await sleep(250);
    if ((await cluster.query(leader, waiting)) === '') continue;
    // A moment more: COMMITs arriving now join the ones already waiting.
    await sleep(300);
    return Number(
      await cluster.query(
        leader,
        `select count(*) filter (where pg_terminate_backend(pid)) from (${waiting}) as w`,
      ),
    );
  }
  return 0;
}
