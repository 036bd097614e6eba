import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../core/engine.ts';
import type { IdempotencyOptions } from '../core/engine-context.ts';
import { AtomicCompletionMissingError, isIdempotencyError } from '../core/errors.ts';
import type { Execution } from '../core/execution.ts';
import type { IdempotencyEvent, StoredResponse } from '../core/types.ts';
import type { TransactionOf } from '../store/drizzle/drizzle-types.ts';
import { reapExpiredKeys } from '../store/drizzle/reaper.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import { sweepExpiredLeases } from '../store/drizzle/sweeper.ts';
import { refusal } from '../testing/refusal.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

const CONCURRENCY = 50;
const ROUNDS = 20;
const FIXTURE = join(import.meta.dirname, 'fixtures/atomic-holder.ts');

type Tx = TransactionOf<typeof t.db>;
let t: IdempotencyTestDatabase;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  t = await createIdempotencyTestDatabase('atomic', CONCURRENCY + 5);
  await t.sql`create table side_effects (key text, pid int, request int)`;
});
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await t?.drop();
});

let counter = 0;
const newKey = () => `atomic-${++counter}-${Math.random()}`;

function engine(extra: Partial<IdempotencyOptions<Tx>> = {}, db = t.db) {
  const events: IdempotencyEvent[] = [];
  const idempotency = createIdempotency<Tx>({
    store: createDrizzleStore(db) as never,
    defaults: { mode: 'atomic' },
    onEvent: (e) => events.push(e),
    ...extra,
  });
  return { idempotency, events, types: () => events.map((e) => e.type) };
}

/** The write-first handler: one side effect and the completed key in one transaction. */
function writeFirst(key: string, request = 0, db = t.db, body: unknown = { request }) {
  return (exec: Execution<Tx>) =>
    db.transaction(async (tx) => {
      await tx.execute(sql`insert into side_effects (key, request) values (${key}, ${request})`);
      const response: StoredResponse = { status: 201, headers: {}, body: JSON.stringify(body) };
      await exec.complete(tx as Tx, response);
      return response;
    });
}

async function effects(key: string): Promise<number> {
  const [r] = await t.sql`select count(*)::int as n from side_effects where key = ${key}`;
  return r?.n as number;
}

async function keyRow(key: string) {
  const [r] =
    await t.sql`select state, acquired_via, owner_token, response_body from idempotency_keys where key = ${key}`;
  return r;
}

type Outcome = 'executed' | 'replayed' | 'in_use' | 'reused';
async function outcomeOf(promise: Promise<{ kind: 'executed' | 'replayed' }>): Promise<Outcome> {
  try {
    return (await promise).kind;
  } catch (error) {
    if (isIdempotencyError(error) && error.code === 'idempotency_key_in_use') return 'in_use';
    if (isIdempotencyError(error) && error.code === 'idempotency_key_reused') return 'reused';
    throw error;
  }
}

/**
 * CONCURRENCY requests released at once on one key per round, each running a transaction that
 * writes a side effect and completes the key: exactly one executes, every other replays, and
 * the side effect exists once. Returns the tally over all rounds.
 */
async function raceOneKey(
  idempotency: ReturnType<typeof engine>['idempotency'],
  rounds: number,
  prefix: string,
) {
  await Promise.all(Array.from({ length: CONCURRENCY }, () => t.sql`select pg_sleep(0.05)`));
  const tally = { executed: 0, replayed: 0, in_use: 0, reused: 0, handlerRuns: 0 };
  for (let round = 0; round < rounds; round++) {
    const key = `${prefix}-${round}`;
    let go!: () => void;
    const start = new Promise<void>((resolve) => {
      go = resolve;
    });
    const requests = Array.from({ length: CONCURRENCY }, async (_, request) => {
      await start;
      return outcomeOf(
        idempotency.execute(
          { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
          async (exec) =>
            t.db.transaction(async (tx) => {
              tally.handlerRuns++;
              await tx.execute(
                sql`insert into side_effects (key, request) values (${key}, ${request})`,
              );
              // Hold the transaction open a little so the duplicates really overlap it.
              await tx.execute(sql`select pg_sleep(0.02)`);
              const response = { status: 201, headers: {}, body: JSON.stringify({ request }) };
              await exec.complete(tx as Tx, response);
              return response;
            }),
        ),
      );
    });
    go();
    const outcomes = await Promise.all(requests);
    for (const o of outcomes) tally[o]++;
    expect(outcomes.filter((o) => o === 'executed')).toHaveLength(1);
    // No lock_timeout on these connections: a duplicate waits for the winner and replays it.
    expect(outcomes.filter((o) => o === 'replayed')).toHaveLength(CONCURRENCY - 1);
    expect(await effects(key)).toBe(1);
    expect(await keyRow(key)).toMatchObject({ state: 'completed', acquired_via: 'atomic' });
  }
  return tally;
}

/**
 * 20 requests at once on one key per round, half with one fingerprint and half with another:
 * one executes, its twins replay, the others get 422 (`reused`), one effect per key.
 */
async function raceTwoFingerprints(
  idempotency: ReturnType<typeof engine>['idempotency'],
  rounds: number,
) {
  for (let round = 0; round < rounds; round++) {
    const key = newKey();
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, request) =>
        outcomeOf(
          idempotency.execute(
            { tenantId: 't', operation: 'pay', key, fingerprint: request % 2 ? 'odd' : 'even' },
            writeFirst(key, request, t.db, { fp: request % 2 ? 'odd' : 'even' }),
          ),
        ).then((outcome) => ({ outcome, fp: request % 2 ? 'odd' : 'even' })),
      ),
    );
    expect(outcomes.filter((o) => o.outcome === 'executed')).toHaveLength(1);
    expect(await effects(key)).toBe(1);
    const winnerFp = JSON.parse((await keyRow(key))?.response_body).fp;
    for (const o of outcomes.filter((o) => o.outcome !== 'executed'))
      expect(o.outcome).toBe(o.fp === winnerFp ? 'replayed' : 'reused');
  }
}

/**
 * With an allowance of 2 new keys: two keys run, a retry of the first replays (not counted, not
 * refused), and a third new key gets 429 and stores nothing.
 */
async function replayWhileLimited({ idempotency, types }: ReturnType<typeof engine>) {
  const tenantId = `rl-${Math.random()}`;
  const run = (key: string) =>
    idempotency.execute({ tenantId, operation: 'pay', key, fingerprint: 'fp' }, writeFirst(key));
  const [a, b, c] = [newKey(), newKey(), newKey()];
  await run(a);
  await run(b);
  expect((await run(a)).kind).toBe('replayed');
  const limited = await refusal(run(c));
  expect(limited.code).toBe('idempotency_rate_limited');
  expect(limited.retryAfterSeconds).toBeGreaterThan(0);
  expect(await effects(a)).toBe(1);
  expect(await keyRow(c)).toBeUndefined();
  expect(types()).toEqual([
    'created',
    'completed',
    'created',
    'completed',
    'replayed',
    'rate_limited',
  ]);
}

describe('atomic mode', () => {
  it(`${CONCURRENCY} truly concurrent requests with one key write exactly once, all others replay (${ROUNDS} rounds)`, async () => {
    const { idempotency } = engine({ storeTimeoutMs: 10_000 });
    const tally = await raceOneKey(idempotency, ROUNDS, 'race');
    // Many duplicates passed the read-only pre-check and ran their handler: the primary key
    // inside the business transaction is what kept the effect single, not the pre-check.
    expect(tally.handlerRuns).toBeGreaterThan(ROUNDS);
    console.log(`atomic concurrency: ${JSON.stringify(tally)}`);
  }, 120_000);

  it('racing requests with another fingerprint get 422 while the winner runs once', async () => {
    const { idempotency } = engine({ storeTimeoutMs: 10_000 });
    await raceTwoFingerprints(idempotency, 5);
  }, 60_000);

  it('replays a completed key (no second effect) and answers 422 for another fingerprint; events match leased mode', async () => {
    const { idempotency, types } = engine();
    const key = newKey();
    const first = await idempotency.execute(
      { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
      writeFirst(key),
    );
    const again = await idempotency.execute(
      { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
      writeFirst(key, 1),
    );
    expect(first.kind).toBe('executed');
    expect(again).toEqual({ kind: 'replayed', response: first.response });
    const reused = await refusal(
      idempotency.execute(
        { tenantId: 't', operation: 'pay', key, fingerprint: 'other' },
        writeFirst(key, 2),
      ),
    );
    expect(reused.code).toBe('idempotency_key_reused');
    expect(await effects(key)).toBe(1);
    expect(await keyRow(key)).toMatchObject({ state: 'completed', owner_token: null });
    expect(types()).toEqual(['created', 'completed', 'replayed', 'reused']);
  });

  it('a handler that returns without complete() fails with AtomicCompletionMissingError and stores nothing', async () => {
    const { idempotency } = engine();
    const key = newKey();
    await expect(
      idempotency.execute(
        { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
        async () => ({
          status: 200,
          headers: {},
          body: '"ok"',
        }),
      ),
    ).rejects.toBeInstanceOf(AtomicCompletionMissingError);
    expect(await keyRow(key)).toBeUndefined();
    // A 4xx the handler answers itself is returned as is, not stored: the key stays free.
    const declined = await idempotency.execute(
      { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
      async () => ({ status: 400, headers: {}, body: '"bad"' }),
    );
    expect(declined).toEqual({
      kind: 'executed',
      response: { status: 400, headers: {}, body: '"bad"' },
    });
    expect(await keyRow(key)).toBeUndefined();
  });

  it('an error after complete() rolls the key back with the effect: the retry runs', async () => {
    const { idempotency, types } = engine();
    const key = newKey();
    await expect(
      idempotency.execute({ tenantId: 't', operation: 'pay', key, fingerprint: 'fp' }, (exec) =>
        t.db.transaction(async (tx) => {
          await tx.execute(sql`insert into side_effects (key) values (${key})`);
          await exec.complete(tx as Tx, { status: 201, headers: {}, body: null });
          throw new Error('boom after complete');
        }),
      ),
    ).rejects.toThrow('boom after complete');
    expect(await keyRow(key)).toBeUndefined();
    expect(await effects(key)).toBe(0);
    const retry = await idempotency.execute(
      { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
      writeFirst(key),
    );
    expect(retry.kind).toBe('executed');
    expect(await effects(key)).toBe(1);
    expect(types()).toEqual(['released', 'created', 'completed']);
  });

  it('leased-mode rows keep answering 409: live lease, unknown, and a committed phase; an expired lease at "started" is taken over', async () => {
    const { idempotency } = engine();
    const seed = async (key: string, state: string, extra: string) =>
      t.sql.unsafe(
        `insert into idempotency_keys (tenant_id, operation, key, fingerprint, state, owner_token, locked_until, recovery_point, expires_at)
         values ('t', 'pay', $1, 'fp', $2, ${extra}, now() + interval '1 day')`,
        [key, state],
      );
    const live = newKey();
    await seed(live, 'in_progress', `'owner', now() + interval '30 seconds', 'started'`);
    const unknown = newKey();
    await seed(unknown, 'unknown', `null, null, 'charged'`);
    const phased = newKey();
    await seed(phased, 'in_progress', `'owner', now() - interval '1 second', 'charged'`);
    const expired = newKey();
    await seed(expired, 'in_progress', `'old-owner', now() - interval '1 second', 'started'`);
    const run = (key: string) =>
      idempotency.execute(
        { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
        writeFirst(key),
      );

    const inUse = await refusal(run(live));
    expect([inUse.code, inUse.retryAfterSeconds]).toEqual(['idempotency_key_in_use', 2]);
    expect((await refusal(run(unknown))).code).toBe('idempotency_outcome_unknown');
    expect((await refusal(run(phased))).code).toBe('idempotency_key_in_use');
    expect((await run(expired)).kind).toBe('executed');
    for (const key of [live, unknown, phased]) expect(await effects(key)).toBe(0);
    expect(await keyRow(expired)).toMatchObject({ state: 'completed', owner_token: null });
    // The old leased holder can no longer complete: its owner-token-guarded write finds nothing.
    const store = createDrizzleStore(t.db);
    expect(
      await store.complete(
        undefined,
        { tenantId: 't', operation: 'pay', key: expired },
        'old-owner',
        { status: 200, headers: {}, body: null },
        1000,
      ),
    ).toBe('lost');
  });

  it('the reaper deletes expired atomic rows, the sweeper leaves them alone, and an expired key runs again', async () => {
    const { idempotency } = engine({ defaults: { mode: 'atomic', ttlMs: 1 } });
    const key = newKey();
    await idempotency.execute(
      { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
      writeFirst(key),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Expired: the next request runs again (overwriting the row in its own transaction).
    const rerun = await idempotency.execute(
      { tenantId: 't', operation: 'pay', key, fingerprint: 'fp2' },
      writeFirst(key, 1),
    );
    expect(rerun.kind).toBe('executed');
    expect(await effects(key)).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const sweep = await sweepExpiredLeases(t.db);
    expect(sweep.released + sweep.markedUnknown).toBe(0);
    expect(await keyRow(key)).toMatchObject({ state: 'completed' });
    const reaped = await reapExpiredKeys(t.db);
    expect(reaped.deleted).toBeGreaterThanOrEqual(1);
    expect(await keyRow(key)).toBeUndefined();
  });

  it('a duplicate that waits past lock_timeout answers 409 idempotency_key_in_use with Retry-After; after the commit it replays', async () => {
    const impatient = postgres(t.url, {
      max: 2,
      onnotice: () => {},
      connection: { lock_timeout: 200 },
    });
    try {
      const key = newKey();
      const { idempotency } = engine();
      const waiting = engine({}, drizzle(impatient));
      let finish!: () => void;
      const held = new Promise<void>((resolve) => {
        finish = resolve;
      });
      let inserted!: () => void;
      const insertedKey = new Promise<void>((resolve) => {
        inserted = resolve;
      });
      const first = idempotency.execute(
        { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
        (exec) =>
          t.db.transaction(async (tx) => {
            await tx.execute(sql`insert into side_effects (key) values (${key})`);
            const response = { status: 201, headers: {}, body: '"first"' };
            await exec.complete(tx as Tx, response);
            inserted();
            await held; // the transaction stays open, its key uncommitted
            return response;
          }),
      );
      await insertedKey;
      const conflict = await refusal(
        waiting.idempotency.execute(
          { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
          writeFirst(key, 1, drizzle(impatient)),
        ),
      );
      expect([conflict.code, conflict.retryAfterSeconds]).toEqual(['idempotency_key_in_use', 1]);
      expect(waiting.types()).toEqual(['in_use']);
      finish();
      expect((await first).kind).toBe('executed');
      const replay = await waiting.idempotency.execute(
        { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
        writeFirst(key, 2, drizzle(impatient)),
      );
      expect(replay).toEqual({
        kind: 'replayed',
        response: { status: 201, headers: {}, body: '"first"' },
      });
      expect(await effects(key)).toBe(1);
    } finally {
      await impatient.end({ timeout: 1 });
    }
  });

  it('SIGKILL of a real process inside the transaction leaves no key and no effect; the retry runs once', async () => {
    const key = newKey();
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
      env: { ...process.env, DATABASE_URL: t.url, KEY: key, HANG: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let stderr = '';
    child.stderr?.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        if (line === 'IN_TX') resolve();
      });
      exited.then(() => reject(new Error(`fixture exited early: ${stderr}`)));
    });
    child.kill('SIGKILL');
    await exited;
    // Postgres rolls the dead backend's transaction back once it notices the closed socket.
    await expect
      .poll(
        async () =>
          (
            await t.sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`
          )[0]?.n,
        { timeout: 10_000 },
      )
      .toBe(0);
    expect(await keyRow(key)).toBeUndefined();
    expect(await effects(key)).toBe(0);
    const { idempotency } = engine();
    const retry = await idempotency.execute(
      { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
      writeFirst(key),
    );
    expect(retry.kind).toBe('executed');
    expect(await effects(key)).toBe(1);
    const again = await idempotency.execute(
      { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
      writeFirst(key),
    );
    expect(again.kind).toBe('replayed');
    expect(await effects(key)).toBe(1);
  }, 30_000);

  it('counts new keys against the rate limit in its own statement; replays are not counted', async () => {
    await replayWhileLimited(engine({ rateLimit: { maxNewKeys: 2, windowMs: 60_000 } }));
  });

  it('spends a principal’s allowance only on keys it stored: failures and racing duplicates are free', async () => {
    const { idempotency } = engine({ rateLimit: { maxNewKeys: 2, windowMs: 60_000 } });
    const tenantId = `rl-principal-${Math.random()}`;
    const run = (principal: string, key: string, handler = writeFirst(key)) =>
      idempotency.execute(
        { tenantId, operation: 'pay', key, fingerprint: 'fp', principal },
        handler,
      );
    // Ten refused requests (the handler throws before storing anything) spend nothing.
    for (let i = 0; i < 10; i++) {
      await run('shopper-1', newKey(), async () => {
        throw new Error('empty cart');
      }).catch(() => {});
    }
    // Twenty concurrent duplicates of one key store it once and count it once.
    const dup = newKey();
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () => outcomeOf(run('shopper-1', dup))),
    );
    expect(outcomes.filter((o) => o === 'executed')).toHaveLength(1);
    expect(await effects(dup)).toBe(1);
    // Intervals (60 s / 2) the allowance runs ahead of now: one per key counted and kept.
    const [counted] = await t.sql`
      select ceil(extract(epoch from theoretical_arrival - now()) / 30)::int as new_keys
        from idempotency_rate_limits where tenant_id = ${tenantId} and principal = 'shopper-1'`;
    expect(counted?.new_keys).toBe(1);
    // One more new key fits shopper-1's allowance of two; the next is refused.
    expect((await run('shopper-1', newKey())).kind).toBe('executed');
    expect((await refusal(run('shopper-1', newKey()))).code).toBe('idempotency_rate_limited');
    // Another principal of the same tenant has its own allowance.
    expect((await run('shopper-2', newKey())).kind).toBe('executed');
  });

  it('store down: 503 before the handler runs', async () => {
    const broken = createIdempotency<Tx>({
      store: { ...createDrizzleStore(t.db), lookup: () => new Promise(() => {}) } as never,
      defaults: { mode: 'atomic' },
      storeTimeoutMs: 100,
    });
    let ran = false;
    const error = await refusal(
      broken.execute(
        { tenantId: 't', operation: 'pay', key: newKey(), fingerprint: 'fp' },
        async () => {
          ran = true;
          return { status: 200, headers: {}, body: null };
        },
      ),
    );
    expect([error.code, ran]).toEqual(['idempotency_store_unavailable', false]);
  });

  it('an expired answer is never replayed for a refusal: past its retention the handler decides (with and without the pre-check)', async () => {
    for (const precheck of [true, false]) {
      const { idempotency } = engine({ defaults: { mode: 'atomic', precheck, ttlMs: 1 } });
      const key = newKey();
      const request = { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' };
      await idempotency.execute(request, writeFirst(key));
      await new Promise((resolve) => setTimeout(resolve, 20)); // past the 1 ms retention
      const refusedByHandler = await idempotency.execute(request, async () => ({
        status: 422,
        headers: {},
        body: '"this payment cannot be matched"',
      }));
      expect([precheck, refusedByHandler.kind, refusedByHandler.response.status]).toEqual([
        precheck,
        'executed',
        422,
      ]);
    }
  });

  it('with the pre-check: a duplicate that read no key while the first was committing, then refused by the first’s effect, is answered with the replay', async () => {
    const { idempotency } = engine({ defaults: { mode: 'atomic', precheck: true } });
    await t.sql`create table if not exists captures (key text primary key)`;
    const key = newKey();
    const request = { tenantId: 't', operation: 'capture', key, fingerprint: 'fp' };
    let commit = (): void => {};
    const committing = new Promise<void>((resolve) => {
      commit = resolve;
    });
    let wrote = (): void => {};
    const firstWrote = new Promise<void>((resolve) => {
      wrote = resolve;
    });
    // The business check of an operator's capture: the second finds it captured and refuses.
    const capture = (holdCommit: boolean) => (exec: Execution<Tx>) =>
      t.db.transaction(async (tx) => {
        const rows = await tx.execute(
          sql`insert into captures (key) values (${key}) on conflict do nothing returning key`,
        );
        if (rows.length === 0) return { status: 409, headers: {}, body: '"already captured"' };
        const response: StoredResponse = { status: 202, headers: {}, body: '"captured"' };
        await exec.complete(tx as Tx, response);
        if (holdCommit) {
          wrote();
          await committing;
        }
        return response;
      });
    const first = idempotency.execute(request, capture(true));
    await firstWrote;
    // The duplicate's read finds no key (uncommitted), so its handler runs and waits on the row.
    const duplicate = idempotency.execute(request, capture(false));
    for (;;) {
      const [waiting] =
        await t.sql`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like 'insert into captures%'`;
      if ((waiting?.n as number) > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    commit();
    expect((await first).kind).toBe('executed');
    expect(await duplicate).toEqual({ kind: 'replayed', response: (await first).response });
  });
});

describe('atomic mode without the pre-check (precheck: false)', () => {
  const noPrecheck = (extra: Partial<IdempotencyOptions<Tx>> = {}) =>
    engine({ defaults: { mode: 'atomic', precheck: false }, ...extra });

  it(`${CONCURRENCY} truly concurrent requests with one key still write exactly once; every request runs its transaction`, async () => {
    const { idempotency } = noPrecheck({ storeTimeoutMs: 10_000 });
    const rounds = 8;
    const tally = await raceOneKey(idempotency, rounds, 'race-noprecheck');
    expect(tally.handlerRuns).toBe(CONCURRENCY * rounds);
  }, 120_000);

  it('a retry of a finished key runs, rolls back at the key and replays; another fingerprint gets 422; no second effect', async () => {
    const { idempotency, types } = noPrecheck();
    const key = newKey();
    // Its side effect under a fresh id each run: no business uniqueness helps here.
    const handler = (request: number) => (exec: Execution<Tx>) =>
      t.db.transaction(async (tx) => {
        await tx.execute(sql`insert into side_effects (key, request) values (${key}, ${request})`);
        const response: StoredResponse = { status: 201, headers: {}, body: '{"first":true}' };
        await exec.complete(tx as Tx, response);
        return response;
      });
    const first = await idempotency.execute(
      { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
      handler(0),
    );
    const again = await idempotency.execute(
      { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
      handler(1),
    );
    expect(again).toEqual({ kind: 'replayed', response: first.response });
    const reused = await refusal(
      idempotency.execute(
        { tenantId: 't', operation: 'pay', key, fingerprint: 'other' },
        handler(2),
      ),
    );
    expect(reused.code).toBe('idempotency_key_reused');
    expect(await effects(key)).toBe(1);
    expect(types()).toEqual(['created', 'completed', 'replayed', 'reused']);
  });

  it('a retry whose handler fails on its own first attempt (a business unique index) is answered with the replay', async () => {
    const { idempotency, types } = noPrecheck();
    await t.sql`create table if not exists orders (key text primary key)`;
    const key = newKey();
    const request = { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' };
    const placeOrder = (exec: Execution<Tx>) =>
      t.db.transaction(async (tx) => {
        await tx.execute(sql`insert into orders (key) values (${key})`);
        const response: StoredResponse = { status: 201, headers: {}, body: '{"order":1}' };
        await exec.complete(tx as Tx, response);
        return response;
      });
    const first = await idempotency.execute(request, placeOrder);
    // Before: the unique violation of the business insert reached the client as an error.
    expect(await idempotency.execute(request, placeOrder)).toEqual({
      kind: 'replayed',
      response: first.response,
    });
    // Another request under the key keeps the handler's own outcome (no replay of a stranger's answer).
    const other = await idempotency
      .execute({ ...request, fingerprint: 'other' }, placeOrder)
      .catch((error: unknown) => error);
    // drizzle wraps the driver's error; the unique violation is its cause.
    expect((other as { cause?: { code?: string } }).cause?.code).toBe('23505');
    expect(types()).toEqual(['created', 'completed', 'replayed', 'released']);
  });

  it('a retry whose handler refuses because of its own first attempt (answers 409 itself) is answered with the replay', async () => {
    const { idempotency } = noPrecheck();
    const key = newKey();
    const request = { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' };
    let done = false;
    const once = (exec: Execution<Tx>) =>
      t.db.transaction(async (tx) => {
        if (done) return { status: 409, headers: {}, body: '{"error":"already paid"}' };
        const response: StoredResponse = { status: 201, headers: {}, body: '{"paid":true}' };
        await exec.complete(tx as Tx, response);
        done = true;
        return response;
      });
    const first = await idempotency.execute(request, once);
    expect(await idempotency.execute(request, once)).toEqual({
      kind: 'replayed',
      response: first.response,
    });
  });

  it('racing requests with another fingerprint get 422 while the winner runs once', async () => {
    const { idempotency } = noPrecheck({ storeTimeoutMs: 10_000 });
    await raceTwoFingerprints(idempotency, 1);
  }, 60_000);

  it('a principal at its rate limit still gets its finished keys replayed, and only new keys refused', async () => {
    // The allowance is spent when the replay arrives: without the read before refusing, a 429.
    await replayWhileLimited(noPrecheck({ rateLimit: { maxNewKeys: 2, windowMs: 60_000 } }));
  });
});

describe('adaptive pre-check (the default)', () => {
  it('a retry storm after a run of first requests: every retry replayed, the handler stops running within three, one effect per key', async () => {
    const { idempotency } = engine();
    let handlerRuns = 0;
    const counted = (key: string) => {
      const handler = writeFirst(key);
      return (exec: Execution<Tx>) => {
        handlerRuns++;
        return handler(exec);
      };
    };
    const keys = Array.from({ length: 40 }, newKey);
    for (const key of keys)
      await idempotency.execute(
        { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
        counted(key),
      );
    handlerRuns = 0;
    const outcomes: string[] = [];
    const runsAt: number[] = [];
    for (const key of keys.slice(0, 20)) {
      const outcome = await idempotency.execute(
        { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
        counted(key),
      );
      outcomes.push(outcome.kind);
      runsAt.push(handlerRuns);
    }
    expect(outcomes).toEqual(Array(20).fill('replayed'));
    expect(handlerRuns).toBeLessThanOrEqual(3);
    expect(runsAt.slice(3).every((n) => n === handlerRuns)).toBe(true);
    for (const key of keys.slice(0, 20)) expect(await effects(key)).toBe(1);
  });
});
