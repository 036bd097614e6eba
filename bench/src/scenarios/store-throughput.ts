import { randomUUID } from 'node:crypto';
import { createDatabaseClient } from '@once/db';
import { computeFingerprint, createIdempotency, type StoredResponse } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import type { GoalResult, ResultRow, ScenarioResult } from '../harness/result-types.ts';
import type { Scenario } from '../harness/scenario.ts';
import { round, summarize } from '../harness/stats.ts';
import type { Transaction } from '../servers/payment-write.ts';

const LEVELS = [1, 2, 4, 8, 16];
const RESPONSE: StoredResponse = { status: 200, headers: {}, body: '{"ok":true}' };

/**
 * Runs `op` from `concurrency` loops for `seconds` (or until `stop` resolves), returning every
 * latency (ms) and ops/s. Shared with the retention scenario.
 */
export async function closedLoop(
  concurrency: number,
  seconds: number,
  op: () => Promise<unknown>,
  stop?: Promise<unknown>,
) {
  const samples: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  let failures = 0;
  let stopped = false;
  stop?.finally(() => {
    stopped = true;
  });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline && !stopped) {
        const t0 = performance.now();
        try {
          await op();
          samples.push(performance.now() - t0);
        } catch {
          failures++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  // This process's CPU (library + driver + loop) per operation: on 2 shared cores it competes with Postgres.
  const clientCpuMsPerOp = (cpu.user + cpu.system) / 1000 / Math.max(1, samples.length);
  return {
    latency: summarize(samples),
    throughput: samples.length / elapsed,
    failures,
    clientCpuMsPerOp,
    samples,
    elapsed,
  };
}

/**
 * 4. Store throughput: `execute` (reserve in its own commit, then a trivial handler whose
 * response the engine completes in one autocommit statement: 2 durable commits, 2 statements) straight against the store, no HTTP, at 1..16
 * connections. Baseline at each level: the physical floor, 2 plain autocommit writes of one row.
 */
export const storeThroughput: Scenario = {
  name: 'store',
  title: '4. Store throughput (execute = reserve + complete), by connections',
  async run(ctx): Promise<ScenarioResult> {
    const seconds = Math.max(1, ctx.measureSec / 2);
    const rows: ResultRow[] = [];
    for (const connections of LEVELS) {
      const client = createDatabaseClient(ctx.pg.url, {
        applicationName: 'once-bench-store',
        max: connections,
      });
      const idempotency = createIdempotency<Transaction>({ store: createDrizzleStore(client.db) });
      const fingerprint = computeFingerprint('bench.store', { n: 1 });
      const execute = () =>
        idempotency.execute(
          { tenantId: 'tenant_a', operation: 'bench.store', key: randomUUID(), fingerprint },
          // No business write, so no transaction of its own: the engine completes the key in
          // one autocommit statement. (Wrapping `exec.complete` alone in a transaction added
          // BEGIN and COMMIT round trips that the floor does not pay.)
          async () => RESPONSE,
        );
      const floor = async () => {
        const id = randomUUID();
        await client.sql`insert into bench_floor (id) values (${id})`;
        await client.sql`update bench_floor set done = true where id = ${id}`;
      };
      await closedLoop(connections, ctx.warmupSec / 2, execute);
      await closedLoop(connections, ctx.warmupSec / 2, floor);
      // Two rounds each, interleaved, against background noise.
      const half = seconds / 2;
      const f1 = await closedLoop(connections, half, floor);
      const e1 = await closedLoop(connections, half, execute);
      const f2 = await closedLoop(connections, half, floor);
      const e2 = await closedLoop(connections, half, execute);
      await client.close();
      const merge = (a: typeof f1, b: typeof f1): Omit<ResultRow, 'name'> => ({
        throughput: (a.throughput + b.throughput) / 2,
        latency: {
          ...a.latency,
          count: a.latency.count + b.latency.count,
          median: (a.latency.median + b.latency.median) / 2,
          p99: Math.max(a.latency.p99, b.latency.p99),
        },
        extra: {
          'client CPU ms/op': round((a.clientCpuMsPerOp + b.clientCpuMsPerOp) / 2),
          ...(a.failures + b.failures ? { failures: a.failures + b.failures } : {}),
        },
      });
      const floorName = `floor: 2 autocommit writes, ${connections} conn`;
      rows.push({ name: floorName, baseline: connections === 1, ...merge(f1, f2) });
      rows.push({ name: `execute, ${connections} conn`, comparedTo: floorName, ...merge(e1, e2) });
      ctx.log(
        `store ${connections} conn: execute ${round(rows.at(-1)!.throughput!)} ops/s, floor ${round(rows.at(-2)!.throughput!)} ops/s`,
      );
    }
    const best = Math.max(
      ...rows.filter((r) => r.name.startsWith('execute')).map((r) => r.throughput ?? 0),
    );
    return {
      name: this.name,
      title: this.title,
      settings: { secondsPerVariantPerLevel: seconds, levels: LEVELS.join('/') },
      rows,
      goals: [storeGoal(rows)],
      notes: [
        `Peak: ${round(best)} reservations+completions per second. Each execute row is compared with the floor at ` +
          'the same connection count (2 durable commits of one small row, no library). p99 is the worse of two rounds, median their mean.',
        'Durable commits dominate: throughput grows with connections because Postgres group-commits concurrent ' +
          'transactions into one WAL flush; on 2 shared cores the CPU saturates before 16 connections.',
      ],
    };
  },
};

/** Execute at the most connections measured, against the two-write floor at the same count. */
function storeGoal(rows: readonly ResultRow[]): GoalResult {
  const connections = Math.max(...LEVELS);
  const floor = rows.find((r) => r.name === `floor: 2 autocommit writes, ${connections} conn`);
  const execute = rows.find((r) => r.name === `execute, ${connections} conn`);
  const ratio = (execute?.throughput ?? 0) / (floor?.throughput || 1);
  return {
    goal: `execute >= 0.6 x the two-autocommit-writes floor at ${connections} connections`,
    met: ratio >= 0.6,
    detail: `Measured ${round(ratio)}x (${round(execute?.throughput ?? 0)} vs ${round(floor?.throughput ?? 0)} ops/s).`,
  };
}
