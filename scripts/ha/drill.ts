// Every failure the cluster must survive, once, under a steady stream of acknowledged inserts:
// kill -9 of the primary then its rejoin (pg_rewind), a planned switchover, a stopped primary
// (SIGSTOP) then resumed. After each: a new leader, both standbys streaming again, and the
// acknowledged rows still there (a synchronous mode must lose none; `async` reports its loss).
import postgres from 'postgres';
import type { HaCluster, HaNodeName } from './cluster.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A read right after a failover may meet a connection the old primary's shutdown ended. */
async function retried<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (attempt >= 20) throw error;
      await sleep(500);
    }
  }
}

export async function runDrill(cluster: HaCluster, log: (line: string) => void): Promise<void> {
  const sql = postgres(cluster.url('once'), { max: 4, connect_timeout: 3, onnotice: () => {} });
  await sql`create table if not exists drill (id bigint primary key)`;
  const acknowledged: number[] = [];
  let next = 0;
  let writing = true;
  const writer = (async () => {
    while (writing) {
      const id = ++next;
      try {
        await sql`insert into drill values (${id})`;
        acknowledged.push(id);
      } catch {
        await sleep(100);
      }
    }
  })();

  const step = async (
    what: string,
    act: (leader: HaNodeName) => Promise<void>,
    rejoin?: (old: HaNodeName) => void,
  ) => {
    await cluster.waitForHealthy(120_000);
    const old = await cluster.waitForLeader(30_000);
    const started = Date.now();
    await act(old);
    const leader = await cluster.waitForLeader(90_000, old);
    const failoverMs = Date.now() - started;
    rejoin?.(old);
    await cluster.waitForHealthy(120_000);
    // Acknowledged before the read: an insert acknowledged while the read runs is not in its snapshot.
    const acknowledgedBefore = acknowledged.slice();
    const present = new Set(
      (await retried(() => sql`select id from drill`)).map((r) => Number(r.id)),
    );
    const lost = acknowledgedBefore.filter((id) => !present.has(id)).length;
    log(
      `${what}: ${old} -> ${leader} in ${failoverMs} ms, rejoined; ${acknowledged.length} acknowledged, ${lost} lost`,
    );
    if (lost > 0 && cluster.mode !== 'async')
      throw new Error(`${cluster.mode} lost ${lost} acknowledged rows`);
  };

  try {
    await step(
      'kill -9 of the primary',
      async (old) => cluster.killNode(old),
      (old) => cluster.startNode(old),
    );
    await step('switchover', async () => cluster.switchover());
    await step('stopped primary', async (old) => {
      cluster.pauseNode(old);
      await cluster.waitForLeader(90_000, old);
      cluster.resumeNode(old);
    });
  } finally {
    writing = false;
    await writer;
    await sql.end({ timeout: 1 });
  }
}
