import { randomUUID } from 'node:crypto';
import { startBenchServer } from '../harness/bench-server.ts';
import { runInterleaved } from '../harness/load.ts';
import type { GoalResult } from '../harness/result-types.ts';
import {
  PAY_BODY,
  payLoad,
  rowFromLoad,
  type Scenario,
  type ScenarioOutcome,
} from '../harness/scenario.ts';
import { sendAll } from '../harness/send.ts';
import { round } from '../harness/stats.ts';

const CONNECTIONS = 16;
const FINISHED_KEYS = 500;
/** Steady traffic: one request in this many is a retry of a finished key. */
const MIXED_RETRY_EVERY = 100;
const STORM = 'tRPC atomic, retry storm (adaptive)';
const STORM_READ = 'tRPC atomic, retry storm (always read)';
const STEADY = 'tRPC atomic, 1 in 100 a retry (adaptive)';
const STEADY_READ = 'tRPC atomic, 1 in 100 a retry (always read)';

/**
 * 2. Replay: retries of finished keys (same key, same body) versus first requests, for the tRPC
 * plugin and the fetch wrapper. A replay is one read of the stored response, no business write.
 * Then atomic mode's pre-check under two traffic mixes: a retry storm (every request a retry;
 * the adaptive pre-check must read) and steady traffic with one retry in 100 (adaptive against
 * always reading: the read costs every first request, skipping it costs the retries).
 */
export const replay: Scenario = {
  name: 'replay',
  title: '2. Replay of finished keys vs first requests',
  async run(ctx): Promise<ScenarioOutcome> {
    const server = await startBenchServer({ databaseUrl: ctx.pg.url });
    try {
      const paths = {
        tRPC: '/trpc/pay.guarded',
        fetch: '/fetch/guarded',
        atomic: '/trpc/pay.guardedAtomic',
        alwaysRead: '/trpc/pay.guardedAtomicAlwaysRead',
      };
      const finished: Record<string, string[]> = {};
      for (const [name, path] of Object.entries(paths)) {
        finished[name] = Array.from({ length: FINISHED_KEYS }, () => randomUUID());
        const statuses = await sendAll(`${server.url}${path}`, PAY_BODY, finished[name]!);
        const bad = [...statuses.values()].filter((s) => s >= 300).length;
        if (bad)
          throw new Error(`${bad} of the ${FINISHED_KEYS} priming requests to ${path} failed`);
      }
      const load = (path: string, key: () => string) =>
        payLoad(server, ctx, path, CONNECTIONS, { key, countReplays: true });
      const cycle = (keys: string[]) => {
        let i = 0;
        return () => keys[i++ % keys.length]!;
      };
      const mixed = (keys: string[]) => {
        const retry = cycle(keys);
        let i = 0;
        return () => (++i % MIXED_RETRY_EVERY === 0 ? retry() : randomUUID());
      };
      // Each variant: its name, its load, and the row it is compared with (none: the baseline).
      const variants = [
        ['tRPC first request', load(paths.tRPC, () => randomUUID())],
        ['tRPC replay', load(paths.tRPC, cycle(finished.tRPC!)), 'tRPC first request'],
        ['fetch first request', load(paths.fetch, () => randomUUID()), 'tRPC first request'],
        ['fetch replay', load(paths.fetch, cycle(finished.fetch!)), 'fetch first request'],
        [STORM, load(paths.atomic, cycle(finished.atomic!)), STORM_READ],
        [STORM_READ, load(paths.alwaysRead, cycle(finished.alwaysRead!)), 'tRPC first request'],
        [STEADY, load(paths.atomic, mixed(finished.atomic!)), STEADY_READ],
        [STEADY_READ, load(paths.alwaysRead, mixed(finished.alwaysRead!)), 'tRPC first request'],
      ] as const;
      const results = await runInterleaved(
        variants.map(([name, load]) => ({ name, load })),
        2,
      );
      const get = (name: string) => results.get(name)!;
      const goals: GoalResult[] = ['tRPC', 'fetch'].map((name) => {
        const ratio =
          get(`${name} replay`).latency.median / get(`${name} first request`).latency.median;
        const replays = get(`${name} replay`);
        return {
          goal: `${name}: replay median latency <= 0.25 x first request's`,
          met: ratio <= 0.25,
          detail: `Measured ${round(ratio)}x (${round(replays.latency.median)} ms vs ${round(get(`${name} first request`).latency.median)} ms); ${replays.replayed} of ${replays.latency.count} replays carried Idempotent-Replayed: true.`,
        };
      });
      const storm = get(STORM);
      const stormRead = get(STORM_READ);
      const steady = get(STEADY);
      const steadyRead = get(STEADY_READ);
      const steadyNote =
        `Steady traffic with one retry in ${MIXED_RETRY_EVERY}: adaptive ${round(steady.throughput)} ops/s ` +
        `(${steady.replayed} replays), always read ${round(steadyRead.throughput)} ops/s (${steadyRead.replayed} replays), ` +
        `${round(steady.throughput / steadyRead.throughput)}x. No goal: a retry that runs its transaction costs about ten ` +
        'reads, so at one retry in 100 the read saved on 99 first requests and the transactions wasted on retries nearly ' +
        'cancel out; with no retries at all (scenario 1) skipping the read is the cheaper path.';
      goals.push({
        goal: 'atomic, retry storm: the adaptive pre-check reads (replay median <= 1.25 x always reading)',
        met: storm.latency.median <= 1.25 * stormRead.latency.median,
        detail: `Adaptive ${round(storm.latency.median)} ms, always read ${round(stormRead.latency.median)} ms; ${storm.replayed} of ${storm.latency.count} answers replayed.`,
      });
      return {
        settings: {
          connections: CONNECTIONS,
          finishedKeys: FINISHED_KEYS,
          measureSec: ctx.measureSec,
        },
        rows: variants.map(([name, , comparedTo]) => {
          const result = get(name);
          const row = rowFromLoad(
            name,
            result,
            name.endsWith(' first request') ? {} : { replayed: result.replayed },
          );
          if (!comparedTo) return { ...row, baseline: true };
          return comparedTo === 'tRPC first request' ? row : { ...row, comparedTo };
        }),
        goals,
        notes: [
          'A replay is the reservation statement finding a completed row and returning its stored response: ' +
            'one round trip that writes nothing and commits nothing durable (no WAL flush), versus 2 durable commits ' +
            'and the business write for a first request.',
          "Atomic mode's pre-check: in a retry storm every request is a retry of a finished key, and the adaptive " +
            'pre-check should be reading (a few requests after the storm starts), so its replays cost what always reading ' +
            'costs. In steady traffic with one retry in 100, the adaptive pre-check does not read: each first request saves ' +
            'the read, each retry runs the transaction (the payment insert meets its own first row), rolls back and is ' +
            'answered by one read.',
          steadyNote,
        ],
      };
    } finally {
      await server.stop();
    }
  },
};
