import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { startBenchServerPerVariant } from '../harness/bench-server.ts';
import { type LoadResult, pairedRatio, runInterleaved } from '../harness/load.ts';
import { REDIS_INSTALL_HINT } from '../harness/redis.ts';
import type { GoalResult } from '../harness/result-types.ts';
import {
  PAY_BODY,
  payLoad,
  rowFromLoad,
  type Scenario,
  type ScenarioOutcome,
  skipped,
} from '../harness/scenario.ts';
import { sendAll } from '../harness/send.ts';
import { round } from '../harness/stats.ts';

const CONNECTIONS = 16;
// As in the overhead scenario: five paired rounds of 2 s, goals read the median per-round ratio.
// A dedicated long run sets both (`--rounds`, `--round-sec`) until the twin below resolves.
const ROUNDS = 5;
/** How close the A/A twin must read to its original, in every round, for the run to decide. */
const RESOLUTION = 0.03;
const TWIN = 'Once fetch handle, atomic mode, a second process (A/A twin)';

const GUARDS = {
  ours: { label: 'Once fetch handle (Postgres)', path: '/fetch/guarded' },
  oursTrpc: { label: 'Once tRPC plugin (Postgres)', path: '/trpc/pay.guarded' },
  oursAtomic: {
    label: 'Once fetch handle, atomic mode (Postgres)',
    path: '/fetch/guarded-atomic',
  },
  oursTrpcAtomic: {
    label: 'Once tRPC plugin, atomic mode (Postgres)',
    path: '/trpc/pay.guardedAtomic',
  },
  powertools: { label: '@aws-lambda-powertools/idempotency (Redis)', path: '/peer/powertools' },
  nodeIdempotency: { label: '@node-idempotency/core (Redis)', path: '/peer/node-idempotency' },
};

/**
 * 7. Peers side by side: the same write guarded by us and by two Redis-backed peers; then each
 * guard's store is restarted after a batch and the same keys are sent again: duplicates counted.
 */
export const peers: Scenario = {
  name: 'peers',
  title: '7. Peers side by side (same write, same load)',
  async run(ctx): Promise<ScenarioOutcome> {
    const redis = ctx.redis;
    if (!redis) {
      ctx.log(REDIS_INSTALL_HINT);
      return skipped(REDIS_INSTALL_HINT);
    }
    const routes = [
      { name: 'unguarded', path: '/fetch/plain' },
      { name: 'unguarded + 1 durable write (floor)', path: '/fetch/floor' },
      { name: FETCH_ATOMIC_FLOOR, path: '/fetch/floor-in-transaction' },
      { name: TRPC_ATOMIC_FLOOR, path: '/trpc/pay.floorInTransaction' },
      ...Object.values(GUARDS).map((g) => ({ name: g.label, path: g.path })),
      { name: TWIN, path: GUARDS.oursAtomic.path },
    ];
    const rounds = ctx.args.rounds ?? ROUNDS;
    const roundSec = ctx.args.roundSec ?? ctx.measureSec / 3;
    // A server process per variant, as in the overhead scenario.
    const servers = await startBenchServerPerVariant(routes.length, {
      databaseUrl: ctx.pg.url,
      redisUrl: redis.url,
    });
    const urlOf = (name: string) => servers.each[routes.findIndex((r) => r.name === name)]!.url;
    const sql = postgres(ctx.pg.url, { max: 1, onnotice: () => {} });
    try {
      // The app schema refuses a second payment per checkout key (payments_idempotency_key_unique);
      // this scenario measures the guards alone, so it runs without that backstop.
      await sql`drop index if exists payments_idempotency_key_unique`;
      const variants = routes.map(({ name, path }, i) => ({
        name,
        load: payLoad(servers.each[i]!, ctx, path, CONNECTIONS, {
          durationSec: roundSec * rounds,
        }),
      }));
      const results = await runInterleaved(variants, rounds);

      // Durability: a batch, a store restart (no persistence for Redis, as deployed for caches),
      // the same keys again. Every duplicate is a customer charged twice.
      const batch = ctx.args.quick ? 50 : 200;
      const sendBatch = async (guard: { label: string; path: string }, keys: string[]) => {
        const statuses = await sendAll(`${urlOf(guard.label)}${guard.path}`, PAY_BODY, keys, {
          retryUntilMs: 60_000,
        });
        const failed = [...statuses.values()].filter((s) => s === 0 || s >= 300).length;
        if (failed)
          ctx.log(`${failed} of ${keys.length} requests to ${guard.path} failed after retries`);
      };
      const keys = Object.fromEntries(
        Object.keys(GUARDS).map((name) => [
          name,
          Array.from({ length: batch }, () => `dur-${name}-${randomUUID()}`),
        ]),
      );
      const ourGuards = ['ours', 'oursTrpc', 'oursAtomic', 'oursTrpcAtomic'] as const;
      const stores = [
        {
          name: 'redis',
          guards: ['powertools', 'nodeIdempotency'] as const,
          restart: redis.restart,
        },
        { name: 'postgres', guards: ourGuards, restart: ctx.pg.restart },
      ];
      for (const store of stores) {
        for (const name of store.guards) await sendBatch(GUARDS[name], keys[name]!);
        await store.restart();
        ctx.log(`${store.name} restarted`);
        for (const name of store.guards) await sendBatch(GUARDS[name], keys[name]!);
      }
      const duplicates = new Map<string, number>();
      for (const [name, sent] of Object.entries(keys)) {
        const [row] = await sql<{ n: number }[]>`
          select (count(*) - count(distinct idempotency_key))::int as n from payments where idempotency_key in ${sql(sent)}`;
        duplicates.set(name, row?.n ?? -1);
      }

      const rows = [
        { ...rowFromLoad('unguarded', results.get('unguarded')!), baseline: true },
        ...['unguarded + 1 durable write (floor)', FETCH_ATOMIC_FLOOR, TRPC_ATOMIC_FLOOR].map(
          (name) => rowFromLoad(name, results.get(name)!),
        ),
        ...Object.entries(GUARDS).map(([name, g]) =>
          rowFromLoad(g.label, results.get(g.label)!, {
            [`duplicates after store restart (of ${batch})`]: duplicates.get(name) ?? '',
          }),
        ),
        { ...rowFromLoad(TWIN, results.get(TWIN)!), comparedTo: GUARDS.oursAtomic.label },
      ];
      const resultOf = (g: { label: string }) => results.get(g.label)!;
      const ours = (g: { label: string }) => round(resultOf(g).throughput);
      const [fastestPeer, slowerPeer] = [GUARDS.powertools, GUARDS.nodeIdempotency].sort(
        (a, b) => resultOf(b).throughput - resultOf(a).throughput,
      ) as [(typeof GUARDS)['powertools'], (typeof GUARDS)['powertools']];
      // Ours against a peer round by round (the same pairing as the overhead goals).
      const against = (g: { label: string }, peer: { label: string }) =>
        pairedRatio(resultOf(g), resultOf(peer));
      const versus = (g: { label: string }, peer: { label: string }) => {
        const r = against(g, peer);
        return `${ours(g)} ops/s, ${round(r.median)}x (rounds ${round(r.min)}-${round(r.max)})`;
      };
      const twin = pairedRatio(results.get(TWIN)!, resultOf(GUARDS.oursAtomic));
      const goals: GoalResult[] = [
        {
          goal: `the run resolves ${RESOLUTION * 100}%: the A/A twin reads within ${1 - RESOLUTION}-${1 + RESOLUTION}x of its original in every round`,
          met: twin.min >= 1 - RESOLUTION && twin.max <= 1 + RESOLUTION,
          detail:
            `The same atomic fetch route in a second process read ${round(twin.median)}x (rounds ${round(twin.min)}-${round(twin.max)}, ` +
            `whole run ${round(twin.whole)}x) of the first over ${twin.rounds} rounds of ${roundSec} s. ` +
            "Where it does not, a ratio closer to 1 than the twin's spread is not decided by this run.",
        },
        atomicAgainstPeer(
          { fetch: GUARDS.oursAtomic, tRPC: GUARDS.oursTrpcAtomic },
          { fetch: FETCH_ATOMIC_FLOOR, tRPC: TRPC_ATOMIC_FLOOR },
          fastestPeer,
          slowerPeer,
          results,
        ),
        {
          goal: 'ours, leased mode (fetch and tRPC) >= the slower Redis peer',
          met:
            against(GUARDS.ours, slowerPeer).median >= 1 &&
            against(GUARDS.oursTrpc, slowerPeer).median >= 1,
          detail: `fetch ${versus(GUARDS.ours, slowerPeer)}, tRPC ${versus(GUARDS.oursTrpc, slowerPeer)} of the slower peer (${ours(slowerPeer)} ops/s).`,
        },
        {
          goal: 'zero duplicate executions after our store (Postgres) restarts',
          met: ourGuards.every((name) => duplicates.get(name) === 0),
          detail: `Ours (leased fetch, leased tRPC, atomic fetch, atomic tRPC): ${ourGuards.map((name) => duplicates.get(name)).join(' + ')} duplicates; powertools ${duplicates.get('powertools')}, node-idempotency ${duplicates.get('nodeIdempotency')} of ${batch} re-sent keys.`,
        },
      ];
      return {
        settings: {
          connections: CONNECTIONS,
          rounds,
          measureSec: roundSec * rounds,
          durabilityBatch: batch,
          redis: "--save '' --appendonly no",
        },
        rows,
        goals,
        notes: [
          'Every variant runs the same business transaction on the same Postgres (price, payment, outbox job, NOTIFY). ' +
            'The peers keep their keys in Redis: a reservation and a completion are two in-memory round trips, no fsync, ' +
            'and the completion is a separate write after the payment committed (a crash between the two leaves the key ' +
            'in progress until expiry, or loses it). Ours reserves with one durable commit and completes inside the payment transaction.',
          'Restart test: the batch is sent, the store is killed and started again (Redis without persistence; Postgres ' +
            'with fsync on), and the same keys are re-sent (retrying 5xx until the store is back). A duplicate is a second ' +
            'payment row for one key: a second charge.',
        ],
      };
    } finally {
      await sql.end({ timeout: 5 });
      await servers.stop();
    }
  },
};

const FETCH_ATOMIC_FLOOR = 'unguarded + 1 row in the transaction (atomic floor)';
const TRPC_ATOMIC_FLOOR = 'unguarded tRPC + 1 row in the transaction (atomic floor)';
/** What atomic mode must reach of its own floor when that floor runs below the peer. */
const ATOMIC_OF_FLOOR = 0.97;

/**
 * Ours in atomic mode against the fastest peer, per adapter, round by round; where the
 * adapter's floor itself ran below the peer, no guard writing to this Postgres could reach it,
 * so the adapter is read against its floor instead, and the detail says so.
 */
function atomicAgainstPeer(
  ours: Record<'fetch' | 'tRPC', { label: string }>,
  floors: Record<'fetch' | 'tRPC', string>,
  peer: { label: string },
  otherPeer: { label: string },
  results: Map<string, LoadResult>,
): GoalResult {
  const of = (name: string) => results.get(name)!;
  const verdicts = (['fetch', 'tRPC'] as const).map((adapter) => {
    const vsPeer = pairedRatio(of(ours[adapter].label), of(peer.label));
    const floorVsPeer = pairedRatio(of(floors[adapter]), of(peer.label));
    const ofFloor = pairedRatio(of(ours[adapter].label), of(floors[adapter]));
    const byFloor = floorVsPeer.median < 1;
    const text =
      `${adapter} ${round(of(ours[adapter].label).throughput)} ops/s, ${round(vsPeer.median)}x of the peer (rounds ${round(vsPeer.min)}-${round(vsPeer.max)}); ` +
      `its floor ${round(floorVsPeer.median)}x of the peer` +
      (byFloor
        ? `, below it, so its floor decides: ${round(ofFloor.median)}x of the floor (goal ${ATOMIC_OF_FLOOR}x)`
        : '');
    return { met: byFloor ? ofFloor.median >= ATOMIC_OF_FLOOR : vsPeer.median >= 1, text };
  });
  return {
    goal: 'ours, atomic mode (fetch and tRPC) >= the fastest Redis peer (or >= 0.97x of its floor where that floor runs below the peer)',
    met: verdicts.every((v) => v.met),
    detail: `${verdicts.map((v) => v.text).join('; ')}. Fastest peer: ${peer.label} at ${round(of(peer.label).throughput)} ops/s (${otherPeer.label} ${round(of(otherPeer.label).throughput)}).`,
  };
}
