// Every failure the cluster must survive (kill -9 and rejoin, a switchover, SIGSTOP and resume),
// in an order and after delays drawn from the seed, under acknowledged inserts from four
// clients on the multi-host URL. After each: a new leader, both standbys streaming, and a
// count of the acknowledged rows that are gone (a synchronous mode must lose none).

import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import type { HaCluster, HaNodeName } from './cluster.ts';

/** mulberry32: the drill's order and delays are a function of its seed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0 || 0x9e3779b9;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A read right after a failover may meet a connection the old primary's shutdown ended. */
export async function retried<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (attempt >= 40) throw error;
      await sleep(500);
    }
  }
}

/** What a failure does to the leader; `rejoins`: the old one restarts once another leads. */
export interface Failure {
  act(cluster: HaCluster, leader: HaNodeName): Promise<void>;
  rejoins?: boolean;
}

export const FAILURES: Record<FailoverOutcome['fault'], Failure> = {
  'kill -9': { act: async (cluster, leader) => cluster.killNode(leader), rejoins: true },
  switchover: { act: (cluster) => cluster.switchover() },
  SIGSTOP: {
    act: async (cluster, leader) => {
      cluster.pauseNode(leader);
      await cluster.waitForLeader(120_000, leader).finally(() => cluster.resumeNode(leader));
    },
  },
};

interface FailoverOutcome {
  fault: 'kill -9' | 'switchover' | 'SIGSTOP';
  from: HaNodeName;
  to: HaNodeName;
  /** The longest time without an acknowledged write, from the fault until healthy again. */
  writeGapMs: number;
  /** Acknowledged before the check and absent on the new primary. */
  lost: number;
}

export async function runDrill(
  cluster: HaCluster,
  log: (line: string) => void,
  { rounds = 1, seed = 1 } = {},
): Promise<FailoverOutcome[]> {
  const random = seeded(seed);
  const sql = postgres(cluster.url('once'), { max: 4, connect_timeout: 3, onnotice: () => {} });
  await retried(() => sql`create table if not exists drill (id bigint primary key)`);
  const [row] = await sql<
    { start: number }[]
  >`select coalesce(max(id), 0)::int as start from drill`;
  const start = row?.start ?? 0;
  const acknowledged: { id: number; at: number }[] = [];
  let next = start;
  let writing = true;
  const writers = [1, 2, 3, 4].map(async () => {
    while (writing) {
      const id = ++next;
      try {
        await sql`insert into drill values (${id})`;
        acknowledged.push({ id, at: Date.now() });
      } catch {
        await sleep(50);
      }
    }
  });

  const outcomes: FailoverOutcome[] = [];
  const failover = async (fault: FailoverOutcome['fault']) => {
    await cluster.waitForHealthy(180_000);
    const from = await cluster.waitForLeader(30_000);
    await sleep(500 + Math.floor(random() * 2_500));
    const started = Date.now();
    await FAILURES[fault].act(cluster, from);
    const to = await cluster.waitForLeader(120_000, from);
    if (FAILURES[fault].rejoins) cluster.startNode(from);
    await cluster.waitForHealthy(180_000);
    // The longest stretch without an acknowledged write, from the fault until healthy again
    // (a switchover's old primary still acknowledges until it shuts down).
    const acks = acknowledged.filter((a) => a.at > started).map((a) => a.at);
    let writeGapMs = 0;
    for (let i = 0, previous = started; i <= acks.length; i++) {
      const at = acks[i] ?? Date.now();
      writeGapMs = Math.max(writeGapMs, at - previous);
      previous = at;
    }
    // Acknowledged before the read: an insert acknowledged while it runs is not in its snapshot.
    const before = acknowledged.slice();
    const present = new Set(
      (await retried(() => sql`select id from drill where id > ${start}`)).map((r) => Number(r.id)),
    );
    const lost = before.filter((a) => !present.has(a.id)).length;
    const outcome = { fault, from, to, writeGapMs, lost };
    outcomes.push(outcome);
    // Lost rows are counted once: the next failover counts only its own.
    for (const a of before) if (!present.has(a.id)) acknowledged.splice(acknowledged.indexOf(a), 1);
    log(
      `${fault}: ${from} -> ${to}, no write acknowledged for ${outcome.writeGapMs} ms, ${lost} acknowledged lost`,
    );
  };

  try {
    for (let round = 0; round < rounds; round++) {
      const faults = Object.keys(FAILURES) as FailoverOutcome['fault'][];
      const order = faults.map((fault) => ({ fault, k: random() })).sort((a, b) => a.k - b.k);
      for (const { fault } of order) await failover(fault);
    }
  } finally {
    writing = false;
    await Promise.all(writers);
    await sql.end({ timeout: 1 });
  }
  return outcomes;
}
