import { randomUUID } from 'node:crypto';
import { createDatabaseClient, type DatabaseClient, runMigrations } from '@once/db';
import { claimDueJobs } from '@once/db/outbox';
import { seedDemoData } from '@once/db/seed';
import { reapExpiredKeys, sweepExpiredLeases } from '@once/idempotency/drizzle';
import { startBenchServer } from '../harness/bench-server.ts';
import { runInterleaved } from '../harness/load.ts';
import type { GoalResult, ResultRow } from '../harness/result-types.ts';
import {
  PAY_BODY,
  payLoad,
  rowFromLoad,
  type Scenario,
  type ScenarioOutcome,
} from '../harness/scenario.ts';
import { sendAll } from '../harness/send.ts';
import { round, summarize } from '../harness/stats.ts';

const CONNECTIONS = 8;
const ROUNDS = 4;
const ROUTES = [
  ['tRPC atomic', '/trpc/pay.guardedAtomic'],
  ['fetch leased', '/fetch/guarded'],
] as const;
/** Requests sent one at a time to each database for its WAL per request. */
const WAL_REQUESTS = 200;
const CLAIMS = 200;
/** Maintenance must keep up with this many times the insert rate measured here. */
const MAINTENANCE_HEADROOM = 10;
const FLAT_WITHIN = 1.2;

/**
 * 10. Cost as the work grows: the guarded payment against a database whose keys table holds
 * 1 and then 10 million rows (finished and expired mixed; 1 % held by dead holders) beside 1
 * million finished payments and outbox jobs, paired in interleaved rounds with the same
 * routes on an empty database in the same cluster; WAL per request and index sizes at each
 * size; the outbox claim; then the reaper and the sweeper over what expired, and vacuum after a
 * million completions.
 */
export const growth: Scenario = {
  name: 'growth',
  title: '10. Cost as the work grows (keys, payments and jobs in the millions)',
  async run(ctx): Promise<ScenarioOutcome> {
    const sizes = ctx.args.quick ? [20_000, 60_000] : [1_000_000, 10_000_000];
    const history = ctx.args.quick ? 20_000 : 1_000_000;
    const emptyUrl = await ctx.pg.createDatabase('once_bench_growth_empty');
    await runMigrations(emptyUrl);
    const open = (url: string) =>
      createDatabaseClient(url, {
        applicationName: 'once-bench-growth',
        max: 2,
        statementTimeoutMs: 1_800_000,
      });
    const empty = open(emptyUrl);
    const full = open(ctx.pg.url);
    await seedDemoData(empty.db);
    const servers = [
      await startBenchServer({ databaseUrl: emptyUrl }),
      await startBenchServer({ databaseUrl: ctx.pg.url }),
    ];
    try {
      const t0 = performance.now();
      await fillHistory(full, history);
      ctx.log(`growth: ${history} payments and finished jobs in ${seconds(t0)} s`);
      const rows: ResultRow[] = [];
      const goals: GoalResult[] = [];
      const notes: string[] = [];
      let filled = 0;
      let insertRate = 0;
      const long = { durationSec: ctx.measureSec * 2 };
      for (const size of sizes) {
        const t1 = performance.now();
        await fillKeys(full, filled, size);
        filled = size;
        ctx.log(`growth: ${size} keys (${seconds(t1)} s to add)`);
        const results = await runInterleaved(
          ROUTES.flatMap(([name, path]) => [
            { name: `${name}, empty`, load: payLoad(servers[0]!, ctx, path, CONNECTIONS, long) },
            {
              name: `${name}, ${millions(size)}`,
              load: payLoad(servers[1]!, ctx, path, CONNECTIONS, long),
            },
          ]),
          ROUNDS,
        );
        for (const [name] of ROUTES) {
          const base = results.get(`${name}, empty`)!;
          const grown = results.get(`${name}, ${millions(size)}`)!;
          rows.push(
            {
              ...rowFromLoad(`${name}, empty (${millions(size)} run)`, base),
              baseline: !rows.length,
            },
            {
              ...rowFromLoad(`${name}, ${millions(size)}`, grown),
              comparedTo: `${name}, empty (${millions(size)} run)`,
            },
          );
          const p50 = grown.latency.median / base.latency.median;
          const p99 = grown.latency.p99 / base.latency.p99;
          goals.push({
            goal: `${name}: p50 with ${millions(size)} keys within ${FLAT_WITHIN}x of the empty table`,
            met: p50 <= FLAT_WITHIN,
            detail: `p50 ${round(grown.latency.median)} vs ${round(base.latency.median)} ms (${round(p50)}x), p99 ${round(grown.latency.p99)} vs ${round(base.latency.p99)} ms (${round(p99)}x), interleaved in ${ROUNDS} rounds.`,
          });
          insertRate = Math.max(insertRate, grown.throughput);
        }
        const wal = await Promise.all(
          [servers[0]!, servers[1]!].map((server, i) =>
            walPerRequest(i ? full : empty, `${server.url}${ROUTES[0][1]}`),
          ),
        );
        const claim = [await claimLatency(empty), await claimLatency(full)];
        notes.push(
          `${millions(size)} keys: ${await sizesOf(full)}; WAL per tRPC atomic request ${Math.round(wal[1]!)} B (empty: ${Math.round(wal[0]!)} B); ` +
            `outbox claim (up to 10 due jobs, FOR UPDATE SKIP LOCKED; then marked done) p50 ${round(claim[1]!.median)} ms, p99 ${round(claim[1]!.p99)} ms (empty: ${round(claim[0]!.median)}, ${round(claim[0]!.p99)} ms).`,
        );
      }
      const maintenance = await maintain(full, filled);
      notes.push(maintenance.note);
      goals.push({
        goal: `the reaper and the sweeper keep up with ${MAINTENANCE_HEADROOM}x the insert rate measured here`,
        met:
          Math.min(maintenance.reapedPerSecond, maintenance.sweptPerSecond) >=
          MAINTENANCE_HEADROOM * insertRate,
        detail: `reaper ${Math.round(maintenance.reapedPerSecond)} keys/s, sweeper ${Math.round(maintenance.sweptPerSecond)} keys/s, against ${Math.round(insertRate)} new keys/s (the fastest guarded route above) x ${MAINTENANCE_HEADROOM}.`,
      });
      notes.push(await completionsAndVacuum(full, ctx.args.quick ? 20_000 : 1_000_000));
      return {
        settings: {
          connections: CONNECTIONS,
          rounds: ROUNDS,
          keys: sizes.join('/'),
          paymentsAndFinishedJobs: history,
          mix: '70% completed and live, 30% completed and expired (for the reaper), 1% in progress with an expired lease (for the sweeper)',
        },
        rows,
        goals,
        notes: [
          'Each size pairs the same routes on two databases of one cluster, in interleaved rounds: the filled one, and one that holds only what the runs themselves write. The fill is SQL (generate_series), then ANALYZE, as autovacuum would after such growth.',
          ...notes,
        ],
      };
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
      await empty.close();
      await full.close();
    }
  },
};

const seconds = (since: number) => Math.round((performance.now() - since) / 1000);
const millions = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000} M` : `${n / 1000} k`);

/** Finished payments and their done outbox jobs, as a busy shop leaves them. */
async function fillHistory(db: DatabaseClient, n: number): Promise<void> {
  await db.sql`
    insert into payments (tenant_id, id, status, amount, currency, lines, idempotency_key, downstream_key)
    select 'tenant_a', 'pay_fill_' || g, 'succeeded', 4200, 'eur',
      '[{"productId":"book_sre","name":"book_sre","quantity":1,"unitAmount":4200}]'::jsonb,
      'fill-' || g, 'once_pay_fill_' || g
    from generate_series(1, ${n}::int) g`;
  await db.sql`
    insert into outbox_jobs (tenant_id, id, kind, payment_id, downstream_key, payload, status, attempts, run_after)
    select 'tenant_a', 'job_fill_' || g, 'charge_payment', 'pay_fill_' || g, 'once_pay_fill_' || g,
      '{"amount":4200,"currency":"eur"}'::jsonb, 'done', 1, now() - interval '2 days'
    from generate_series(1, ${n}::int) g`;
  await db.sql`analyze payments`;
  await db.sql`analyze outbox_jobs`;
}

/** Keys `from + 1 .. to`: 70 % finished and live, 30 % expired, 1 % left in progress by a dead holder. */
async function fillKeys(db: DatabaseClient, from: number, to: number): Promise<void> {
  await db.sql`
    insert into idempotency_keys (tenant_id, operation, key, fingerprint, state, owner_token,
      locked_until, response_status, response_headers, response_body, created_at, updated_at,
      completed_at, expires_at)
    select 'tenant_a', case when g % 2 = 0 then 'bench.pay.atomic' else 'bench.pay.rest.leased' end,
      'fill-' || g, md5(g::text),
      case when dead then 'in_progress' else 'completed' end,
      case when dead then 'dead-holder' end,
      case when dead then now() - interval '1 hour' end,
      case when dead then null else 201 end,
      case when dead then null else '{}'::jsonb end,
      case when dead then null else '{"paymentId":"pay_' || md5(g::text) || '","status":"processing","amount":4200,"currency":"eur"}' end,
      now() - interval '2 days', now() - interval '2 days',
      case when dead then null else now() - interval '2 days' end,
      case when g % 10 < 3 then now() - interval '1 hour' else now() + interval '1 day' end
    from generate_series(${from + 1}::int, ${to}::int) g, lateral (select g % 100 = 0 as dead) d`;
  await db.sql`analyze idempotency_keys`;
}

/** WAL bytes per request (cluster-wide LSN difference), requests one at a time. */
async function walPerRequest(db: DatabaseClient, url: string): Promise<number> {
  const lsn = async () => {
    const [row] = await db.sql<{ lsn: string }[]>`select pg_current_wal_insert_lsn()::text as lsn`;
    return row!.lsn;
  };
  const from = await lsn();
  await sendAll(
    url,
    PAY_BODY,
    Array.from({ length: WAL_REQUESTS }, () => randomUUID()),
    {
      concurrency: 1,
    },
  );
  const [row] = await db.sql<{ bytes: string }[]>`
    select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), ${from}::pg_lsn) as bytes`;
  return Number(row!.bytes) / WAL_REQUESTS;
}

/** The worker's claim statement, timed; the claimed jobs are then marked done, as a worker would. */
async function claimLatency(db: DatabaseClient) {
  const samples: number[] = [];
  for (let i = 0; i < CLAIMS; i++) {
    await db.sql.begin(async (tx) => {
      const started = performance.now();
      const claims = await claimDueJobs(tx, {
        workerId: 'bench',
        leaseMs: 30_000,
        limit: 10,
        kinds: ['charge_payment'],
      });
      samples.push(performance.now() - started);
      const ids = claims.map((claim) => claim.job.id);
      if (ids.length)
        await tx`update outbox_jobs set status = 'done' where tenant_id = 'tenant_a' and id in ${tx(ids)}`;
    });
  }
  return summarize(samples);
}

async function sizesOf(db: DatabaseClient): Promise<string> {
  const rows = await db.sql<{ name: string; bytes: string }[]>`
    select c.relname as name, pg_relation_size(c.oid) as bytes from pg_class c
    where c.relname like 'idempotency_keys%' and c.relkind in ('r', 'i') order by c.relname`;
  return rows.map((r) => `${r.name} ${Math.round(Number(r.bytes) / 2 ** 20)} MB`).join(', ');
}

/** The reaper and the sweeper over what the fill left expired, each run until it finds nothing. */
async function maintain(db: DatabaseClient, filled: number) {
  const reapStart = performance.now();
  let reaped = 0;
  for (;;) {
    const result = await reapExpiredKeys(db.db, { batchSize: 500, maxBatches: 100 });
    reaped += result.deleted;
    if (result.deleted === 0) break;
  }
  const reapSeconds = (performance.now() - reapStart) / 1000;
  const sweepStart = performance.now();
  let swept = 0;
  for (;;) {
    const result = await sweepExpiredLeases(db.db, { batchSize: 500, maxBatches: 100 });
    swept += result.released + result.markedUnknown;
    if (result.released + result.markedUnknown === 0) break;
  }
  const sweepSeconds = (performance.now() - sweepStart) / 1000;
  return {
    reapedPerSecond: reaped / reapSeconds,
    sweptPerSecond: swept / sweepSeconds,
    note:
      `Maintenance over ${millions(filled)} keys: the reaper deleted ${reaped} expired keys in ${round(reapSeconds)} s ` +
      `(${Math.round(reaped / reapSeconds)}/s, 500 per statement); the sweeper released ${swept} keys of dead holders in ${round(sweepSeconds)} s (${Math.round(swept / sweepSeconds)}/s).`,
  };
}

/**
 * A million leased keys completed (the completion's UPDATE, in batches), then what VACUUM
 * finds and how long it takes: the dead row versions leased mode leaves behind.
 */
async function completionsAndVacuum(db: DatabaseClient, n: number): Promise<string> {
  const before = await tableBytes(db);
  await db.sql`
    insert into idempotency_keys (tenant_id, operation, key, fingerprint, state, owner_token, locked_until, expires_at)
    select 'tenant_a', 'bench.completions', 'c-' || g, md5(g::text), 'in_progress', 'holder',
      now() + interval '1 hour', now() + interval '1 day'
    from generate_series(1, ${n}::int) g`;
  const inserted = await tableBytes(db);
  const started = performance.now();
  for (let from = 1; from <= n; from += 100_000) {
    await db.sql`
      update idempotency_keys set state = 'completed', owner_token = null, locked_until = null,
        response_status = 201, response_headers = '{}'::jsonb,
        response_body = '{"paymentId":"pay_x","status":"processing","amount":4200,"currency":"eur"}',
        completed_at = now(), updated_at = now()
      where tenant_id = 'tenant_a' and operation = 'bench.completions'
        and key in (select 'c-' || g from generate_series(${from}::int, ${Math.min(n, from + 99_999)}::int) g)`;
  }
  const completeSeconds = (performance.now() - started) / 1000;
  const completed = await tableBytes(db);
  // This backend publishes its table counters when idle, at most once a second.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const [dead] = await db.sql<{ n: string }[]>`
    select n_dead_tup as n from pg_stat_user_tables where relname = 'idempotency_keys'`;
  const vacuumStart = performance.now();
  await db.sql`vacuum idempotency_keys`;
  const vacuumSeconds = (performance.now() - vacuumStart) / 1000;
  const vacuumed = await tableBytes(db);
  const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MB`;
  return (
    `${n} completions (leased mode's UPDATE, in batches of 100 k, ${round(completeSeconds)} s): the keys table and its indexes went ` +
    `${mb(before)} -> ${mb(inserted)} (reservations) -> ${mb(completed)} (completed; about ${dead?.n ?? '?'} dead row versions reported); ` +
    `VACUUM took ${round(vacuumSeconds)} s and left ${mb(vacuumed)} (space kept for reuse, not returned to the OS).`
  );
}

async function tableBytes(db: DatabaseClient): Promise<number> {
  const [row] = await db.sql<{ bytes: string }[]>`
    select pg_total_relation_size('idempotency_keys') as bytes`;
  return Number(row!.bytes);
}
