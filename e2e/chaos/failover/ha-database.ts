// The app's database as a replicated cluster (scripts/ha: etcd and three Patroni-managed
// PostgreSQL 15 nodes) and the failover faults the nemesis injects into it. Each failover reads
// the rows the old primary held (right before the fault, and once more before it freezes when a
// partition lets it go on committing) and the rows the new primary holds once the cluster is
// healthy again: what a failover lost, per table, and what must never come back.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FailoverFaultKind, FailoverRecord, LostRow } from '@once/chaos';
import { findFreePort } from '@once/postgres';
import { type HaCluster, type HaNodeName, startHaCluster } from '@once/scripts/ha-cluster';
import type { ReplicationMode } from '@once/scripts/patroni-config';

/** The tables whose rows a client was answered for: the ones a lost commit hurts. */
const CENSUS_TABLES = ['payments', 'refunds', 'payment_actions'] as const;
type CensusTable = (typeof CENSUS_TABLES)[number];

/** Ports: etcd (2), PostgreSQL (3), Patroni's REST API (3). */
const CLUSTER_PORTS = 8;
/** How long the synchronous standby is stopped while COMMITs wait for it. */
const SYNC_STANDBY_STOP_MS = 4_000;

export type HaDatabase = Awaited<ReturnType<typeof startHaDatabase>>;

/**
 * Starts the cluster in `mode` on free loopback ports, with the `once` database on every node.
 */
export async function startHaDatabase(mode: ReplicationMode, log: (line: string) => void) {
  const cluster = await startHaCluster({
    mode,
    basePort: await findFreePort({ count: CLUSTER_PORTS }),
    log: (line) => log(`ha        | ${line}`),
  });
  // Its processes are detached: however this process ends, they end with it (the kills in
  // `stop` run synchronously, before its first await).
  const stopOnExit = () => void cluster.stop();
  process.once('exit', stopOnExit);
  try {
    await cluster.createDatabase('once');
  } catch (error) {
    process.off('exit', stopOnExit);
    await cluster.stop({ keep: true });
    throw error;
  }
  const failovers: FailoverRecord[] = [];

  /**
   * One failover: `act` faults the leader; it calls `lastLook` when the old primary is about to
   * stop answering after committing on its own (a partition), so those rows are counted too.
   */
  const failover = async (
    kind: FailoverFaultKind,
    act: (leader: HaNodeName, lastLook: () => Promise<void>) => Promise<void>,
  ): Promise<{ detail: string; bit: number }> => {
    await cluster.waitForHealthy(180_000);
    const from = await cluster.waitForLeader(30_000);
    const before = await census(cluster, from);
    await act(from, async () => {
      for (const [t, rows] of Object.entries(await census(cluster, from)))
        for (const [id, createdAt] of rows) before[t as CensusTable].set(id, createdAt);
    });
    const to = await cluster.waitForLeader(120_000, from);
    await cluster.waitForHealthy(180_000);
    const after = await census(cluster, to);
    const lost = Object.fromEntries(
      CENSUS_TABLES.map((t) => [
        t,
        [...before[t]]
          .filter(([id]) => !after[t].has(id))
          .map(([id, createdAt]) => ({ id, createdAt })),
      ]),
    ) as Record<CensusTable, LostRow[]>;
    failovers.push({ kind, from, to, lost });
    const gone = CENSUS_TABLES.map((t) => `${lost[t].length} ${t}`).join(', ');
    return { detail: `${from} -> ${to}; rows gone: ${gone}`, bit: 1 };
  };

  return {
    mode,
    /** The multi-host URL of the app's database (`target_session_attrs=primary`). */
    url: cluster.url('once'),
    failovers: failovers as readonly FailoverRecord[],
    /**
     * Injects one fault and waits until the cluster is healthy again (a new leader, both
     * standbys streaming). `downMs`: how long a killed primary stays down before it rejoins,
     * or a stopped one stays stopped once replaced. `bit`: COMMITs cancelled, or 1 for a failover.
     */
    async inject(
      kind: FailoverFaultKind,
      downMs: number,
    ): Promise<{ detail: string; bit: number }> {
      if (kind === 'pg_kill_primary') {
        return failover(kind, async (leader) => {
          cluster.killNode(leader);
          await cluster.waitForLeader(120_000, leader);
          await sleep(downMs);
          // It rejoins as a standby, rewinding what it wrote past the new leader's timeline.
          cluster.startNode(leader);
        });
      }
      if (kind === 'pg_stop_primary') {
        return failover(kind, async (leader, lastLook) => {
          // Cut off, it answers its clients until its lock expires and a standby takes over
          // (about `ttl`): in async mode every commit of that stretch is acknowledged and lost.
          cluster.partitionNode(leader);
          try {
            await cluster.waitForLeader(120_000, leader);
            // What it committed while cut off, read just before it freezes (what it commits
            // between this read and the freeze, a few milliseconds, is not counted).
            await lastLook();
            cluster.pauseNode(leader);
            await sleep(downMs);
          } finally {
            // Its Patroni finds the lock taken, demotes it and rewinds it.
            cluster.resumeNode(leader);
          }
        });
      }
      if (kind === 'pg_switchover') return failover(kind, () => cluster.switchover());
      return cancelSyncWaits(cluster);
    },
    /** Every node up and replicating. */
    heal: () => cluster.waitForHealthy(180_000),
    stop: async () => {
      process.off('exit', stopOnExit);
      await cluster.stop();
    },
  };
}

/**
 * Stops the synchronous standby so COMMITs on the primary wait for it, then cancels those
 * waits with `pg_cancel_backend`: each such COMMIT returns success with PostgreSQL's WARNING
 * "canceling wait for synchronous replication due to user request" (committed locally, maybe
 * on no standby). The app must answer those requests "outcome unknown", never 201.
 */
async function cancelSyncWaits(cluster: HaCluster): Promise<{ detail: string; bit: number }> {
  await cluster.waitForHealthy(180_000);
  const standby = await cluster.syncStandby();
  if (!standby) throw new Error(`no synchronous standby (mode ${cluster.mode})`);
  const leader = await cluster.waitForLeader(30_000);
  const waiting = `select pid from pg_stat_activity
    where wait_event = 'SyncRep' and backend_type = 'client backend'`;
  cluster.pauseNode(standby);
  let cancelled = 0;
  try {
    const until = Date.now() + SYNC_STANDBY_STOP_MS;
    while (Date.now() < until) {
      await sleep(250);
      if ((await cluster.query(leader, waiting)) === '') continue;
      // A moment more: COMMITs arriving now join the ones already waiting.
      await sleep(300);
      cancelled += Number(
        await cluster.query(
          leader,
          `select count(*) filter (where pg_cancel_backend(pid)) from (${waiting}) as w`,
        ),
      );
    }
  } finally {
    cluster.resumeNode(standby);
  }
  await cluster.waitForHealthy(180_000);
  return {
    detail: `${standby} (synchronous standby) stopped ${SYNC_STANDBY_STOP_MS} ms; ${cancelled} COMMIT waits cancelled on ${leader}`,
    bit: cancelled,
  };
}

type Census = Record<CensusTable, Map<string, number>>;

/** The rows of the census tables on one node: id -> created_at (epoch ms). */
async function census(cluster: HaCluster, node: HaNodeName): Promise<Census> {
  const statement = CENSUS_TABLES.map(
    (t) => `select '${t}', id, floor(extract(epoch from created_at) * 1000)::bigint from ${t}`,
  ).join(' union all ');
  for (let attempt = 1; ; attempt++) {
    try {
      const out = await cluster.query(node, statement, 'once');
      const rows = out === '' ? [] : out.split('\n').map((line) => line.split('|'));
      return Object.fromEntries(
        CENSUS_TABLES.map((t) => [
          t,
          new Map(
            rows
              .filter(([table]) => table === t)
              .map(([, id, createdAt]) => [id!, Number(createdAt)]),
          ),
        ]),
      ) as Census;
    } catch (error) {
      // Before the first migration the tables do not exist yet.
      if (/does not exist/.test(String((error as { stderr?: unknown }).stderr ?? error)))
        return Object.fromEntries(CENSUS_TABLES.map((t) => [t, new Map()])) as Census;
      // A promoted node may still be starting.
      if (attempt >= 20) throw error;
      await sleep(500);
    }
  }
}
