import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { installDatabaseClock } from '@once/postgres/testing';
import { sql as sqlOf } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompleter } from '../completer/completer.ts';
import { createIdempotency } from '../core/engine.ts';
import { isIdempotencyError } from '../core/errors.ts';
import type { IdempotencyEvent } from '../core/types.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';
import { fixtureProcesses } from './fixtures/processes.ts';
import { ridePhases } from './fixtures/ride-phases.ts';

const RIDER = join(import.meta.dirname, 'fixtures/phase-holder.ts');
const COMPLETER = join(import.meta.dirname, 'fixtures/completer-process.ts');
/** Longer than any test: a lease ends when the database clock is moved past it, never by waiting. */
const LEASE_MS = 60_000;
const RIDE = ['charge', 'create_ride', 'send_receipt'];

let t: IdempotencyTestDatabase;
let clock: Awaited<ReturnType<typeof installDatabaseClock>>;
let clocked: postgres.Sql;
const processes = fixtureProcesses(() => t.url);
const pools: postgres.Sql[] = [];

beforeAll(async () => {
  t = await createIdempotencyTestDatabase('completer');
  await t.sql`create table side_effects (key text, phase text, pid int)`;
  clock = await installDatabaseClock(t.sql);
  clocked = postgres(t.url, { max: 8, onnotice: () => {} });
});
afterAll(async () => {
  processes.killAll();
  for (const pool of [clocked, ...pools]) await pool?.end({ timeout: 1 });
  await t?.drop();
});

/** An engine of this process on its own pool (another client of the database). */
function engine(events: IdempotencyEvent[] = []) {
  const pool = postgres(t.url, { max: 4, onnotice: () => {} });
  pools.push(pool);
  const db = drizzle(pool);
  const store = createDrizzleStore(db);
  const idempotency = createIdempotency({
    store,
    defaults: { leaseMs: LEASE_MS },
    onEvent: (event) => events.push(event),
  });
  const completer = createCompleter({
    idempotency,
    operations: { ride: ridePhases().afterFirst },
    onEvent: (event) => events.push(event),
    onError: () => {},
  });
  const retry = (key: string) =>
    idempotency.execute({ tenantId: 't', operation: 'ride', key, fingerprint: 'fp' }, (exec) =>
      exec.runPhases(ridePhases().all),
    );
  return { store, completer, retry, events };
}

/** A rider's process runs the ride until phase `hangAt`, and is SIGKILLed there: it never comes back. */
async function abandonedByKill(key: string, hangAt: string) {
  const rider = processes.start(RIDER, {
    MODE: 'phases',
    KEY: key,
    HANG_AT: hangAt,
    LEASE_MS: String(LEASE_MS),
  });
  await rider.waitFor(`IN_PHASE ${hangAt}`);
  rider.child.kill('SIGKILL');
  await rider.exited;
  return rider.child.pid;
}

/** What a client gone after the ride's first phase leaves: the key at `ride_created`, leased. */
async function abandoned(keys: string[]) {
  const { store } = engine();
  for (const key of keys) {
    const ownerToken = randomUUID();
    const id = { tenantId: 't', operation: 'ride', key };
    const input = { ...id, fingerprint: 'fp', ownerToken, leaseMs: LEASE_MS, ttlMs: 86_400_000 };
    const reserved = await store.reserve({
      ...input,
      onExpiredLease: 'resume',
      rateLimit: undefined,
    });
    expect(reserved.kind).toBe('acquired');
    await store.transaction(async (tx) => {
      await tx.execute(
        sqlOf`insert into side_effects (key, phase, pid) values (${key}, 'create_ride', 0)`,
      );
      expect(await store.advance(tx, id, ownerToken, 'ride_created', { rideId: 42 })).toBe('ok');
    });
  }
}

/** Each side effect of `key` with the process that made it, by phase. */
async function effects(key: string): Promise<Record<string, number[]>> {
  const rows = await t.sql`select phase, pid from side_effects where key = ${key} order by phase`;
  const byPhase: Record<string, number[]> = {};
  for (const r of rows) byPhase[r.phase as string] = [...(byPhase[r.phase as string] ?? []), r.pid];
  return byPhase;
}

async function row(key: string) {
  const [found] = await clocked`select state, recovery_point, acquired_via, response_body,
    locked_until > now() as leased from idempotency_keys where key = ${key}`;
  return found;
}

describe('the completer finishes rides whose client never came back (real processes, a database clock)', () => {
  it('a client SIGKILLed mid-ride: left alone while its lease runs; after it, finished once, and a later retry replays it', async () => {
    const riderPid = await abandonedByKill('gone', 'ride_created');
    const nothingCommitted = await abandonedByKill('gone-before-anything', 'started');
    const here = engine();
    expect(await here.completer.runOnce()).toEqual({ completed: 0, failed: 0, lost: 0 });
    await clock.pass(LEASE_MS);

    expect(await here.completer.runOnce()).toEqual({ completed: 1, failed: 0, lost: 0 });
    expect(await effects('gone')).toEqual({
      charge: [process.pid],
      create_ride: [riderPid],
      send_receipt: [process.pid],
    });
    expect(await row('gone')).toMatchObject({ state: 'completed', acquired_via: 'expired_lease' });
    expect(here.events.map((e) => e.type)).toEqual(['lease_taken_over', 'completed', 'resumed']);
    // A key whose first phase never committed is the sweeper's: nothing to finish.
    expect(await row('gone-before-anything')).toMatchObject({
      state: 'in_progress',
      recovery_point: 'started',
    });
    expect(await effects('gone-before-anything')).toEqual({});
    expect(nothingCommitted).toBeGreaterThan(0);

    const late = await here.retry('gone');
    expect(late.kind).toBe('replayed');
    expect(JSON.parse((late as { response: { body: string } }).response.body)).toEqual({
      ride: { rideId: 42 },
      pid: process.pid,
    });
    expect(Object.keys(await effects('gone'))).toEqual(RIDE);
    expect(await here.completer.runOnce()).toEqual({ completed: 0, failed: 0, lost: 0 });
  }, 60_000);

  it('a completer SIGKILLed inside a phase: its lease holds the key until it ends, then another completer finishes from there', async () => {
    await abandoned(['killed-completer']);
    await clock.pass(LEASE_MS);
    const first = processes.start(COMPLETER, { HANG_AT: 'charged' });
    await first.waitFor('IN_PHASE charged killed-completer');
    first.child.kill('SIGKILL');
    await first.exited;
    // It committed `charge` and died inside `charged`: nothing of that phase committed.
    expect(await row('killed-completer')).toMatchObject({
      state: 'in_progress',
      recovery_point: 'charged',
      leased: true,
    });
    const next = engine();
    expect(await next.completer.runOnce()).toEqual({ completed: 0, failed: 0, lost: 0 });
    await clock.pass(LEASE_MS);
    expect(await next.completer.runOnce()).toEqual({ completed: 1, failed: 0, lost: 0 });
    expect(await effects('killed-completer')).toEqual({
      charge: [first.child.pid],
      create_ride: [0],
      send_receipt: [process.pid],
    });
  }, 60_000);

  it('a stalled completer past its lease is taken over: woken, its completion is refused and its phase rolls back', async () => {
    await abandoned(['stale']);
    await clock.pass(LEASE_MS);
    const stale = processes.start(COMPLETER, { HANG_AT: 'charged' });
    await stale.waitFor('IN_PHASE charged stale');
    stale.child.kill('SIGSTOP');
    await clock.pass(LEASE_MS);
    const next = engine();
    expect(await next.completer.runOnce()).toEqual({ completed: 1, failed: 0, lost: 0 });
    stale.child.kill('SIGCONT');
    stale.send('go');
    expect(await stale.json('PASS ')).toEqual({ completed: 0, failed: 0, lost: 1 });
    expect(await effects('stale')).toEqual({
      charge: [stale.child.pid],
      create_ride: [0],
      send_receipt: [process.pid],
    });
    const replay = await next.retry('stale');
    expect(JSON.parse((replay as { response: { body: string } }).response.body).pid).toBe(
      process.pid,
    );
  }, 60_000);

  it('a claim that meets a key another claimer is taking passes over it: never waits for it, never overwrites its token', async () => {
    await abandoned(['taken-elsewhere', 'free']);
    await clock.pass(LEASE_MS);
    const { store } = engine();
    const theirs = randomUUID();
    const mine = randomUUID();
    await clocked.begin(async (tx) => {
      // Another claimer's statement holds the oldest key's row until it commits its token.
      await tx`select 1 from idempotency_keys where key = 'taken-elsewhere' for update`;
      const claimed = await store.claimResumable?.({
        operation: 'ride',
        ownerToken: mine,
        leaseMs: LEASE_MS,
        graceMs: 0,
      });
      expect(claimed?.id.key).toBe('free');
      await tx`update idempotency_keys set owner_token = ${theirs}, locked_until = now() + interval '1 minute'
        where key = 'taken-elsewhere'`;
    });
    const [owner] =
      await clocked`select owner_token from idempotency_keys where key = 'taken-elsewhere'`;
    expect(owner?.owner_token).toBe(theirs);
    // Handed back, `free` is the next pass's; `taken-elsewhere` stays with its claimer.
    await store.endLease({ tenantId: 't', operation: 'ride', key: 'free' }, mine);
    expect(await engine().completer.runOnce()).toEqual({ completed: 1, failed: 0, lost: 0 });
    const taken = { tenantId: 't', operation: 'ride', key: 'taken-elsewhere' };
    expect(
      await store.complete(
        undefined,
        taken,
        theirs,
        { status: 200, headers: {}, body: null },
        LEASE_MS,
      ),
    ).toBe('ok');
  }, 20_000);

  it('two completer processes at once: each key is finished once, each phase effect once', async () => {
    const keys = Array.from({ length: 8 }, (_, i) => `pair-${i}`);
    await abandoned(keys);
    await clock.pass(LEASE_MS);
    const pair = [
      processes.start(COMPLETER, { GATED: '1' }),
      processes.start(COMPLETER, { GATED: '1' }),
    ];
    await Promise.all(pair.map((c) => c.waitFor('READY')));
    for (const c of pair) c.send('go');
    const passes = await Promise.all(pair.map((c) => c.json('PASS ')));
    expect(passes.reduce((n, p) => n + p.completed, 0)).toBe(keys.length);
    expect(passes.reduce((n, p) => n + p.failed + p.lost, 0)).toBe(0);
    for (const key of keys) {
      const byPhase = await effects(key);
      expect(Object.keys(byPhase), key).toEqual(RIDE);
      for (const pids of Object.values(byPhase)) expect(pids, key).toHaveLength(1);
      expect(await row(key)).toMatchObject({ state: 'completed' });
    }
  }, 60_000);

  it("clients' retries racing a completer process for the same keys: one of them runs each key, once", async () => {
    const keys = Array.from({ length: 10 }, (_, i) => `race-${i}`);
    await abandoned(keys);
    await clock.pass(LEASE_MS);
    const completer = processes.start(COMPLETER, { GATED: '1' });
    await completer.waitFor('READY');
    const client = engine();
    completer.send('go');
    const answers = await Promise.all(
      keys.map((key) =>
        client.retry(key).then(
          (outcome) => outcome.kind,
          (error: unknown) => (isIdempotencyError(error) ? error.code : String(error)),
        ),
      ),
    );
    const pass = await completer.json('PASS ');
    for (const answer of answers)
      expect(['executed', 'replayed', 'idempotency_key_in_use']).toContain(answer);
    // Every key the retries did not run, the completer did.
    expect(pass.completed).toBe(answers.filter((a) => a !== 'executed').length);
    for (const key of keys) {
      const byPhase = await effects(key);
      expect(Object.keys(byPhase), key).toEqual(RIDE);
      for (const pids of Object.values(byPhase)) expect(pids, key).toHaveLength(1);
      expect((await client.retry(key)).kind, key).toBe('replayed');
    }
  }, 60_000);
});
