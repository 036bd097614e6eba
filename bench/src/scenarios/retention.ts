import { randomUUID } from 'node:crypto';
import { createDatabaseClient } from '@once/db';
import { computeFingerprint, createIdempotency, type StoredResponse } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';

import type { Scenario, ScenarioOutcome } from '../harness/scenario.ts';
import { startNodeProcess } from '../harness/server-process.ts';
import { round, summarize } from '../harness/stats.ts';
import type { Transaction } from '../servers/payment-write.ts';
import { closedLoop } from './store-throughput.ts';

const CONNECTIONS = 8;
const RESPONSE: StoredResponse = { status: 200, headers: {}, body: '{"ok":true}' };

/** 5. Retention: a million expired keys, then reservations alone and while the reaper deletes them. */
export const retention: Scenario = {
  name: 'retention',
  title: '5. Retention: reservations while the reaper deletes expired keys',
  async run(ctx): Promise<ScenarioOutcome> {
    const expiredKeys = ctx.args.quick ? 50_000 : 1_000_000;
    const client = createDatabaseClient(ctx.pg.url, {
      applicationName: 'once-bench-retention',
      max: CONNECTIONS,
      statementTimeoutMs: 600_000,
    });
    try {
      const insertStarted = performance.now();
      await client.sql`
        insert into idempotency_keys (tenant_id, operation, key, fingerprint, state, response_status,
          response_headers, response_body, created_at, updated_at, completed_at, expires_at)
        select 'tenant_a', 'bench.expired', 'expired-' || g, 'fp', 'completed', 200, '{}'::jsonb, '{"ok":true}',
          now() - interval '2 days', now() - interval '2 days', now() - interval '2 days', now() - interval '1 day'
        from generate_series(1, ${expiredKeys}) g`;
      await client.sql`analyze idempotency_keys`;
      const insertSeconds = (performance.now() - insertStarted) / 1000;
      ctx.log(`inserted ${expiredKeys} expired keys in ${round(insertSeconds)} s`);

      const idempotency = createIdempotency<Transaction>({ store: createDrizzleStore(client.db) });
      const fingerprint = computeFingerprint('bench.retention', {});
      const reserve = () =>
        idempotency.execute(
          { tenantId: 'tenant_a', operation: 'bench.retention', key: randomUUID(), fingerprint },
          async (exec) => {
            await client.db.transaction((tx) => exec.complete(tx, RESPONSE));
            return RESPONSE;
          },
        );
      await closedLoop(CONNECTIONS, ctx.warmupSec, reserve);
      // Baseline in two halves, before and after the reaping, so drift lands on both sides.
      const before = await closedLoop(CONNECTIONS, ctx.measureSec / 2, reserve);
      let finish: (line: string) => void = () => {};
      const reaped = new Promise<string>((resolve) => {
        finish = resolve;
      });
      const reaper = await startNodeProcess({
        name: 'reaper',
        script: 'bench/src/servers/reaper.ts',
        env: { DATABASE_URL: ctx.pg.url },
        ready: /^reaping$/,
        onLine: (line) => line.startsWith('{') && finish(line),
        timeoutMs: 30_000,
      });
      const during = await closedLoop(CONNECTIONS, 600, reserve, reaped);
      const summary = JSON.parse(await reaped) as {
        deleted: number;
        batches: number;
        seconds: number;
      };
      await reaper.stop();
      const after = await closedLoop(CONNECTIONS, ctx.measureSec / 2, reserve);
      const alone = {
        latency: summarize([...before.samples, ...after.samples]),
        throughput:
          (before.samples.length + after.samples.length) / (before.elapsed + after.elapsed),
      };
      const deletedPerSecond = summary.deleted / summary.seconds;
      const p99Ratio = during.latency.p99 / alone.latency.p99;
      return {
        settings: {
          expiredKeys,
          connections: CONNECTIONS,
          reaperBatchSize: 500,
          baselineSec: ctx.measureSec,
          bulkInsertSec: round(insertSeconds),
        },
        rows: [
          {
            name: 'reservations, no reaper (half before, half after)',
            baseline: true,
            throughput: alone.throughput,
            latency: alone.latency,
          },
          {
            name: 'reservations while reaping',
            throughput: during.throughput,
            latency: during.latency,
            extra: {
              'reaper deleted': summary.deleted,
              'reaper deleted/s': Math.round(deletedPerSecond),
              'reaper s': round(summary.seconds),
            },
          },
        ],
        goals: [
          {
            goal: 'reservation p99 during reaping within 2x of without',
            met: p99Ratio <= 2,
            detail: `p99 ${round(during.latency.p99)} ms vs ${round(alone.latency.p99)} ms (${round(p99Ratio)}x); the reaper deleted ${summary.deleted} keys at ${Math.round(deletedPerSecond)}/s.`,
          },
        ],
        notes: [
          'The reaper deletes 500 rows per statement (each its own short transaction) through the partial index on ' +
            'expires_at with FOR UPDATE SKIP LOCKED, so it never waits on a row a request holds; the cost it imposes ' +
            'on reservations is WAL volume and I/O, shared with their own commits.',
        ],
      };
    } finally {
      await client.close();
    }
  },
};
