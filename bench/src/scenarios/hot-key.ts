import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { startBenchServer } from '../harness/bench-server.ts';
import { runLoad } from '../harness/load.ts';

import { PAY_BODY, rowFromLoad, type Scenario, type ScenarioOutcome } from '../harness/scenario.ts';
import { round } from '../harness/stats.ts';

const CONNECTIONS = 200;

/** 3. Hot key: 200 connections on ONE key: one execution, every other answer a replay or 409. */
export const hotKey: Scenario = {
  name: 'hot-key',
  title: '3. Hot key: 200 connections, one key',
  async run(ctx): Promise<ScenarioOutcome> {
    const server = await startBenchServer({ databaseUrl: ctx.pg.url });
    const sql = postgres(ctx.pg.url, { max: 1, onnotice: () => {} });
    try {
      const base = {
        url: server.url,
        path: '/trpc/pay.guarded',
        body: PAY_BODY,
        connections: CONNECTIONS,
      };
      // A request count, not a duration: autocannon drops requests still in flight at the end.
      const amount = ctx.args.quick ? 600 : 3000;
      await runLoad({ ...base, durationSec: 0, amount: CONNECTIONS, key: () => randomUUID() });
      const unique = await runLoad({
        ...base,
        durationSec: 0,
        amount: amount / 2,
        key: () => randomUUID(),
      });
      const key = `hot-${randomUUID()}`;
      const hot = await runLoad({
        ...base,
        durationSec: 0,
        amount,
        key: () => key,
        countReplays: true,
      });
      const [row] = await sql<
        { n: number }[]
      >`select count(*)::int as n from payments where idempotency_key = ${key}`;
      const executions = row?.n ?? -1;
      const ok = hot.statuses['200'] ?? 0;
      const conflicts = hot.statuses['409'] ?? 0;
      const other = hot.latency.count - ok - conflicts;
      const failures = other + hot.errors + hot.timeouts;
      const answeredFirst = ok - hot.replayed;
      return {
        settings: {
          connections: CONNECTIONS,
          hotKeyRequests: amount,
          baselineRequests: amount / 2,
        },
        rows: [
          { ...rowFromLoad('new key per request', unique), baseline: true },
          rowFromLoad('one hot key', hot, { executions, replayed: hot.replayed, '409': conflicts }),
        ],
        goals: [
          {
            goal: 'exactly one execution of the hot key',
            met: executions === 1,
            detail: `${executions} payment row(s) carry the key; ${answeredFirst} response(s) were the first execution.`,
          },
          {
            goal: 'every other answer is a replay or 409, no errors',
            met: failures === 0 && answeredFirst <= 1,
            detail: `${hot.latency.count} responses: ${hot.replayed} replays, ${conflicts} x 409, ${other} other statuses, ${hot.errors + hot.timeouts} socket errors/timeouts.`,
          },
          {
            goal: 'bounded p99',
            met: hot.latency.p99 <= Math.max(unique.latency.p99, 1000),
            detail: `p99 ${round(hot.latency.p99)} ms (max ${round(hot.latency.max)} ms) vs ${round(unique.latency.p99)} ms with new keys.`,
          },
        ],
        notes: [
          'While the first request holds the lease, others get 409 `idempotency_key_in_use` with Retry-After (the IETF ' +
            'draft behaviour; no server-side waiting); once it completes, every retry is a replay. ' +
            'Counting replays needs autocannon to read response headers, which costs it some client CPU.',
        ],
      };
    } finally {
      await sql.end({ timeout: 5 });
      await server.stop();
    }
  },
};
