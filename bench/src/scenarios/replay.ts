import { randomUUID } from 'node:crypto';
import { startBenchServer } from '../harness/bench-server.ts';
import { runInterleaved } from '../harness/load.ts';
import type { GoalResult, ScenarioResult } from '../harness/result-types.ts';
import { PAY_BODY, payLoad, rowFromLoad, type Scenario } from '../harness/scenario.ts';
import { sendAll } from '../harness/send.ts';
import { round } from '../harness/stats.ts';

const CONNECTIONS = 16;
const FINISHED_KEYS = 500;

/**
 * 2. Replay: retries of finished keys (same key, same body) versus first requests, for the tRPC
 * plugin and the fetch wrapper. A replay is one read of the stored response, no business write.
 */
export const replay: Scenario = {
  name: 'replay',
  title: '2. Replay of finished keys vs first requests',
  async run(ctx): Promise<ScenarioResult> {
    const server = await startBenchServer({ databaseUrl: ctx.pg.url });
    try {
      const paths = { tRPC: '/trpc/pay.guarded', fetch: '/fetch/guarded' };
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
      const results = await runInterleaved(
        [
          { name: 'tRPC first request', load: load(paths.tRPC, () => randomUUID()) },
          { name: 'tRPC replay', load: load(paths.tRPC, cycle(finished.tRPC!)) },
          { name: 'fetch first request', load: load(paths.fetch, () => randomUUID()) },
          { name: 'fetch replay', load: load(paths.fetch, cycle(finished.fetch!)) },
        ],
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
      return {
        name: this.name,
        title: this.title,
        settings: {
          connections: CONNECTIONS,
          finishedKeys: FINISHED_KEYS,
          measureSec: ctx.measureSec,
        },
        rows: [
          { ...rowFromLoad('tRPC first request', get('tRPC first request')), baseline: true },
          rowFromLoad('tRPC replay', get('tRPC replay'), { replayed: get('tRPC replay').replayed }),
          rowFromLoad('fetch first request', get('fetch first request')),
          {
            ...rowFromLoad('fetch replay', get('fetch replay'), {
              replayed: get('fetch replay').replayed,
            }),
            comparedTo: 'fetch first request',
          },
        ],
        goals,
        notes: [
          'A replay is the reservation statement finding a completed row and returning its stored response: ' +
            'one round trip that writes nothing and commits nothing durable (no WAL flush), versus 2 durable commits ' +
            'and the business write for a first request.',
        ],
      };
    } finally {
      await server.stop();
    }
  },
};
