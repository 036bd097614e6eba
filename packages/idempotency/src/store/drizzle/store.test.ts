import { sql } from 'drizzle-orm';
import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import type { IdempotencyOptions } from '../../core/engine-context.ts';
import { AmbiguousOutcomeError, LeaseLostError } from '../../core/errors.ts';
import { computeFingerprint } from '../../core/fingerprint.ts';
import { advanceTo, respond } from '../../core/phases.ts';
import type { IdempotencyEvent, StoredResponse } from '../../core/types.ts';
import { refusal } from '../../testing/refusal.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import type { TransactionOf } from './drizzle-types.ts';
import { reapExpiredKeys } from './reaper.ts';
import { resolveUnknownKey } from './resolve-unknown.ts';
import { createDrizzleStore } from './store.ts';
import { sweepExpiredLeases } from './sweeper.ts';

let t: IdempotencyTestDatabase;
const events: IdempotencyEvent[] = [];
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('store');
});
afterAll(async () => {
  await t?.drop();
});

const ok = (body: unknown, status = 200): StoredResponse => ({
  status,
  headers: {},
  body: JSON.stringify(body),
});
let counter = 0;
const newKey = () => `key-${++counter}-${Math.random()}`;

function engine(extra: Partial<IdempotencyOptions<TransactionOf<PostgresJsDatabase>>> = {}) {
  return createIdempotency({
    store: createDrizzleStore(t.db),
    onEvent: (e) => events.push(e),
    ...extra,
  });
}

async function row(tenantId: string, operation: string, key: string) {
  const [r] =
    await t.sql`select * from idempotency_keys where tenant_id = ${tenantId} and operation = ${operation} and key = ${key}`;
  return r;
}

describe('drizzle store + engine', () => {
  it('runs once, then replays the stored response with the same status and body', async () => {
    const idem = engine();
    const key = newKey();
    const fp = computeFingerprint('op', { a: 1 });
    let runs = 0;
    const first = await idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: fp },
      async () => {
        runs++;
        return ok({ n: runs }, 201);
      },
    );
    const second = await idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: fp },
      async () => {
        runs++;
        return ok({ n: runs }, 201);
      },
    );
    expect(runs).toBe(1);
    expect(first.kind).toBe('executed');
    expect(second).toEqual({ kind: 'replayed', response: ok({ n: 1 }, 201) });
  });

  it('answers 409 in_use with Retry-After while the lease is live, 422 on another fingerprint', async () => {
    const idem = engine();
    const key = newKey();
    const fp = computeFingerprint('op', { a: 1 });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const running = idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: fp },
      async () => {
        await gate;
        return ok('done');
      },
    );
    await expect.poll(async () => (await row('t1', 'op', key))?.state).toBe('in_progress');
    const busy = await refusal(
      idem.execute({ tenantId: 't1', operation: 'op', key, fingerprint: fp }, async () => ok('x')),
    );
    expect(busy.code).toBe('idempotency_key_in_use');
    expect(busy.status).toBe(409);
    expect(busy.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    const reused = await refusal(
      idem.execute(
        { tenantId: 't1', operation: 'op', key, fingerprint: computeFingerprint('op', { a: 2 }) },
        async () => ok('x'),
      ),
    );
    expect(reused.code).toBe('idempotency_key_reused');
    expect(reused.status).toBe(422);
    release();
    await running;
    const reusedAfter = await refusal(
      idem.execute(
        { tenantId: 't1', operation: 'op', key, fingerprint: computeFingerprint('op', { a: 2 }) },
        async () => ok('x'),
      ),
    );
    expect(reusedAfter.code).toBe('idempotency_key_reused');
  });

  it('scopes keys by tenant and by operation', async () => {
    const idem = engine();
    const key = newKey();
    let runs = 0;
    for (const [tenantId, operation] of [
      ['ta', 'op1'],
      ['tb', 'op1'],
      ['ta', 'op2'],
    ] as const) {
      const out = await idem.execute(
        { tenantId, operation, key, fingerprint: computeFingerprint(operation, { tenantId }) },
        async () => ok(++runs),
      );
      expect(out.kind).toBe('executed');
    }
    expect(runs).toBe(3);
  });

  it('releases the key when the handler fails before any phase committed (5xx never stored)', async () => {
    const idem = engine();
    const key = newKey();
    const fp = computeFingerprint('op', 1);
    await expect(
      idem.execute({ tenantId: 't1', operation: 'op', key, fingerprint: fp }, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect((await row('t1', 'op', key))?.state).toBe('released');
    const fiveHundred = await idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: fp },
      async () => ok('oops', 503),
    );
    expect(fiveHundred).toMatchObject({ kind: 'executed', response: { status: 503 } });
    expect((await row('t1', 'op', key))?.state).toBe('released');
    // A released key may even run with another payload: nothing happened under it.
    const again = await idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: computeFingerprint('op', 2) },
      async () => ok('second'),
    );
    expect(again.kind).toBe('executed');
    expect((await row('t1', 'op', key))?.attempts).toBe(3);
  });

  it('stores and replays deliberate 4xx outcomes', async () => {
    const idem = engine();
    const key = newKey();
    const fp = computeFingerprint('op', 1);
    let runs = 0;
    const declined = async () => {
      runs++;
      return ok({ error: 'card_declined' }, 402);
    };
    await idem.execute({ tenantId: 't1', operation: 'op', key, fingerprint: fp }, declined);
    const replay = await idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: fp },
      declined,
    );
    expect(runs).toBe(1);
    expect(replay).toEqual({ kind: 'replayed', response: ok({ error: 'card_declined' }, 402) });
  });

  it('marks the key unknown on an ambiguous outcome, refuses retries with 409 outcome_unknown, and reconciliation resolves it', async () => {
    const idem = engine();
    const key = newKey();
    const fp = computeFingerprint('op', 1);
    const error = await refusal(
      idem.execute({ tenantId: 't1', operation: 'op', key, fingerprint: fp }, async () => {
        throw new AmbiguousOutcomeError('timeout');
      }),
    );
    expect(error.code).toBe('idempotency_outcome_unknown');
    expect((await row('t1', 'op', key))?.state).toBe('unknown');
    const retry = await refusal(
      idem.execute({ tenantId: 't1', operation: 'op', key, fingerprint: fp }, async () => ok(1)),
    );
    expect(retry.code).toBe('idempotency_outcome_unknown');
    expect(retry.status).toBe(409);
    expect(retry.retryAfterSeconds).toBeGreaterThan(0);
    expect(
      await resolveUnknownKey(
        t.db,
        { tenantId: 't1', operation: 'op', key },
        { outcome: 'completed', response: ok('reconciled') },
      ),
    ).toBe(true);
    const replay = await idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: fp },
      async () => ok(1),
    );
    expect(replay).toEqual({ kind: 'replayed', response: ok('reconciled') });
  });

  it('commits the stored response inside the caller transaction, and rolls it back with it', async () => {
    const idem = engine();
    await t.sql`create table if not exists business (id text primary key)`;
    const key = newKey();
    const fp = computeFingerprint('op', 1);
    await expect(
      idem.execute({ tenantId: 't1', operation: 'op', key, fingerprint: fp }, async (exec) =>
        t.db.transaction(async (tx) => {
          await tx.execute(sql`insert into business values (${key})`);
          await exec.complete(tx, ok('in-tx'));
          throw new Error('business rule failed after complete');
        }),
      ),
    ).rejects.toThrow('business rule');
    expect((await row('t1', 'op', key))?.state).toBe('released');
    expect(await t.sql`select 1 from business where id = ${key}`).toHaveLength(0);

    const out = await idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: fp },
      async (exec) =>
        t.db.transaction(async (tx) => {
          await tx.execute(sql`insert into business values (${key})`);
          await exec.complete(tx, ok('in-tx'));
          return ok('in-tx');
        }),
    );
    expect(out.kind).toBe('executed');
    expect((await row('t1', 'op', key))?.response_body).toBe('"in-tx"');
  });

  it('refuses a late holder after takeover: LeaseLostError and its transaction rolls back', async () => {
    const idem = engine({ defaults: { leaseMs: 60_000, heartbeat: false } });
    await t.sql`create table if not exists business (id text primary key)`;
    const key = newKey();
    const fp = computeFingerprint('op', 1);
    let resumeOld!: () => void;
    const oldMayFinish = new Promise<void>((resolve) => {
      resumeOld = resolve;
    });
    const old = idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: fp },
      async (exec) => {
        await oldMayFinish;
        return t.db.transaction(async (tx) => {
          await tx.execute(sql`insert into business values (${`${key}-old`})`);
          await exec.complete(tx, ok('old'));
          return ok('old');
        });
      },
    );
    await expect.poll(async () => (await row('t1', 'op', key))?.state).toBe('in_progress');
    await t.sql`update idempotency_keys set locked_until = now() - interval '1 second' where key = ${key}`;
    const takeover = await idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: fp },
      async () => ok('new'),
    );
    expect(takeover.kind).toBe('executed');
    expect(events.some((e) => e.type === 'lease_taken_over')).toBe(true);
    resumeOld();
    await expect(old).rejects.toBeInstanceOf(LeaseLostError);
    expect(await t.sql`select 1 from business where id = ${`${key}-old`}`).toHaveLength(0);
    expect((await row('t1', 'op', key))?.response_body).toBe('"new"');
  });

  it('a completion that committed but whose reply was lost is recognised on the retry, not reported as lost', async () => {
    const real = createDrizzleStore(t.db);
    let calls = 0;
    const idem = createIdempotency({
      store: {
        ...real,
        async complete(...args: Parameters<typeof real.complete>) {
          const result = await real.complete(...args);
          if (++calls === 1) throw new Error('connection reset after commit');
          return result;
        },
      },
    });
    const key = newKey();
    const out = await idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: 'f' },
      async () => ok('once'),
    );
    expect(out.kind).toBe('executed');
    expect(calls).toBe(2);
    expect((await row('t1', 'op', key))?.state).toBe('completed');
  });

  it('refuses responses over the size cap and keeps the key (unknown): the handler returned, it must not run again', async () => {
    const idem = engine({ maxResponseBytes: 100 });
    const key = newKey();
    const error = await refusal(
      idem.execute({ tenantId: 't1', operation: 'op', key, fingerprint: 'f' }, async () =>
        ok('x'.repeat(200)),
      ),
    );
    expect(error.code).toBe('idempotency_response_too_large');
    expect((await row('t1', 'op', key))?.state).toBe('unknown');
  });

  it('limits new keys per tenant per window (429 + Retry-After); retries of existing keys are not counted', async () => {
    const idem = engine({ rateLimit: { maxNewKeys: 3, windowMs: 60_000 } });
    const keys = [newKey(), newKey(), newKey()];
    for (const key of keys)
      await idem.execute({ tenantId: 'rl', operation: 'op', key, fingerprint: 'f' }, async () =>
        ok(1),
      );
    const limited = await refusal(
      idem.execute({ tenantId: 'rl', operation: 'op', key: newKey(), fingerprint: 'f' }, async () =>
        ok(1),
      ),
    );
    expect(limited.code).toBe('idempotency_rate_limited');
    expect(limited.status).toBe(429);
    expect(limited.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(
      (
        await idem.execute(
          { tenantId: 'rl', operation: 'op', key: keys[0] as string, fingerprint: 'f' },
          async () => ok(1),
        )
      ).kind,
    ).toBe('replayed');
    expect(
      (
        await idem.execute(
          { tenantId: 'other', operation: 'op', key: newKey(), fingerprint: 'f' },
          async () => ok(1),
        )
      ).kind,
    ).toBe('executed');
    expect(events.some((e) => e.type === 'rate_limited')).toBe(true);
  });

  it('does not count operations with rateLimited: false (e.g. signed webhooks) against the limit', async () => {
    const idem = engine({
      rateLimit: { maxNewKeys: 2, windowMs: 60_000 },
      operations: { webhook: { rateLimited: false } },
    });
    for (let i = 0; i < 5; i++) {
      const outcome = await idem.execute(
        { tenantId: 'rl-hooks', operation: 'webhook', key: newKey(), fingerprint: 'f' },
        async () => ok(i),
      );
      expect(outcome.kind).toBe('executed');
    }
    // The clients' allowance is untouched by the five webhooks.
    for (let i = 0; i < 2; i++) {
      await idem.execute(
        { tenantId: 'rl-hooks', operation: 'pay', key: newKey(), fingerprint: 'f' },
        async () => ok(i),
      );
    }
    const limited = await refusal(
      idem.execute(
        { tenantId: 'rl-hooks', operation: 'pay', key: newKey(), fingerprint: 'f' },
        async () => ok(3),
      ),
    );
    expect(limited.code).toBe('idempotency_rate_limited');
  });

  it('runs phases (recovery points), and a retry after a failure resumes at the last committed phase', async () => {
    const idem = engine({ defaults: { onExpiredLease: 'resume' } });
    await t.sql`create table if not exists effects (key text, phase text)`;
    const key = newKey();
    let failInCharge = true;
    const handler = (exec: Parameters<Parameters<typeof idem.execute>[1]>[0]) =>
      exec.runPhases({
        started: async (tx) => {
          await tx.execute(sql`insert into effects values (${key}, 'started')`);
          return advanceTo('created', { id: 7 });
        },
        created: async (tx, e) => {
          if (failInCharge) throw new Error('crash in charge');
          await tx.execute(
            sql`insert into effects values (${key}, ${`charged ${JSON.stringify(e.recoveryData)}`})`,
          );
          return respond(ok('charged'));
        },
      });
    await expect(
      idem.execute({ tenantId: 't1', operation: 'ph', key, fingerprint: 'f' }, handler),
    ).rejects.toThrow('crash');
    const r = await row('t1', 'ph', key);
    expect(r?.state).toBe('in_progress');
    expect(r?.recovery_point).toBe('created');
    failInCharge = false;
    const out = await idem.execute(
      { tenantId: 't1', operation: 'ph', key, fingerprint: 'f' },
      handler,
    );
    expect(out.kind).toBe('executed');
    const effects = await t.sql`select phase from effects where key = ${key} order by phase`;
    expect(effects.map((e) => e.phase)).toEqual(['charged {"id":7}', 'started']);
  });

  it('reaps expired terminal keys in batches through the partial index, never unknown or live ones', async () => {
    await t.sql`insert into idempotency_keys (tenant_id, operation, key, fingerprint, state, response_status, expires_at)
      select 'reap', 'op', 'k' || g, 'f', 'completed', 200, now() - interval '1 minute' from generate_series(1, 25) g`;
    await t.sql`insert into idempotency_keys (tenant_id, operation, key, fingerprint, state, expires_at)
      values ('reap', 'op', 'unk', 'f', 'unknown', now() - interval '1 minute')`;
    await t.sql`insert into idempotency_keys (tenant_id, operation, key, fingerprint, state, response_status, expires_at)
      values ('reap', 'op', 'fresh', 'f', 'completed', 200, now() + interval '1 hour')`;
    const reapEvents: IdempotencyEvent[] = [];
    const result = await reapExpiredKeys(t.db, {
      batchSize: 10,
      onEvent: (e) => reapEvents.push(e),
    });
    expect(result.deleted).toBeGreaterThanOrEqual(25);
    expect(result.batches).toBeGreaterThanOrEqual(3);
    const left =
      await t.sql`select key from idempotency_keys where tenant_id = 'reap' order by key`;
    expect(left.map((r) => r.key)).toEqual(['fresh', 'unk']);
    expect(reapEvents[0]).toMatchObject({ type: 'reaped' });
    await t.sql.begin(async (tx) => {
      await tx`set local enable_seqscan = off`;
      const plan = await tx.unsafe(`explain select 1 from idempotency_keys
        where state in ('completed', 'released') and expires_at <= now() order by expires_at limit 10 for update skip locked`);
      expect(plan.map((p) => p['QUERY PLAN']).join('\n')).toContain(
        'idempotency_keys_reapable_idx',
      );
    });
  });

  it('the reaper skips rows a reservation holds locked instead of waiting for them', async () => {
    await t.sql`insert into idempotency_keys (tenant_id, operation, key, fingerprint, state, response_status, expires_at)
      values ('skip', 'op', 'locked', 'f', 'completed', 200, now() - interval '1 minute'),
             ('skip', 'op', 'free', 'f', 'completed', 200, now() - interval '1 minute')`;
    let unlock!: () => void;
    const held = new Promise<void>((resolve) => {
      unlock = resolve;
    });
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const holder = t.sql.begin(async (tx) => {
      await tx`select 1 from idempotency_keys where tenant_id = 'skip' and key = 'locked' for update`;
      locked();
      await held;
    });
    await isLocked;
    const result = await reapExpiredKeys(t.db, { batchSize: 100 });
    expect(result.deleted).toBeGreaterThanOrEqual(1);
    const left = await t.sql`select key from idempotency_keys where tenant_id = 'skip'`;
    expect(left.map((r) => r.key)).toEqual(['locked']);
    unlock();
    await holder;
  });

  it('sweeps expired leases: releases when no phase committed, marks unknown per policy, leaves resumable ones', async () => {
    await t.sql`insert into idempotency_keys (tenant_id, operation, key, fingerprint, state, owner_token, locked_until, recovery_point, on_expired_lease, expires_at) values
      ('sw', 'op', 'a', 'f', 'in_progress', 'x', now() - interval '1 s', 'started', 'unknown', now() + interval '1 h'),
      ('sw', 'op', 'b', 'f', 'in_progress', 'x', now() - interval '1 s', 'charged', 'unknown', now() + interval '1 h'),
      ('sw', 'op', 'c', 'f', 'in_progress', 'x', now() - interval '1 s', 'charged', 'resume', now() + interval '1 h'),
      ('sw', 'op', 'd', 'f', 'in_progress', 'x', now() + interval '1 h', 'started', 'resume', now() + interval '1 h')`;
    const result = await sweepExpiredLeases(t.db, { batchSize: 1 });
    expect(result).toEqual({ released: 1, markedUnknown: 1, leftForResume: 1 });
    const states =
      await t.sql`select key, state from idempotency_keys where tenant_id = 'sw' order by key`;
    expect(states.map((s) => `${s.key}:${s.state}`)).toEqual([
      'a:released',
      'b:unknown',
      'c:in_progress',
      'd:in_progress',
    ]);
  });

  it('honours the per-operation TTL: an expired completed key runs again', async () => {
    const idem = engine({ operations: { short: { ttlMs: 1 } } });
    const key = newKey();
    let runs = 0;
    await idem.execute({ tenantId: 't1', operation: 'short', key, fingerprint: 'f' }, async () =>
      ok(++runs),
    );
    await expect
      .poll(
        async () =>
          (await t.sql`select expires_at <= now() as e from idempotency_keys where key = ${key}`)[0]
            ?.e,
      )
      .toBe(true);
    const again = await idem.execute(
      { tenantId: 't1', operation: 'short', key, fingerprint: 'f' },
      async () => ok(++runs),
    );
    expect(again.kind).toBe('executed');
    expect(runs).toBe(2);
  });

  it('renews the lease with a heartbeat while a long handler runs', async () => {
    const idem = engine({ defaults: { leaseMs: 300 } });
    const key = newKey();
    const out = await idem.execute(
      { tenantId: 't1', operation: 'op', key, fingerprint: 'f' },
      async () => {
        const start = (await row('t1', 'op', key))?.locked_until as Date;
        await expect
          .poll(async () => ((await row('t1', 'op', key))?.locked_until as Date) > start, {
            timeout: 5000,
          })
          .toBe(true);
        return ok('long');
      },
    );
    expect(out.kind).toBe('executed');
  });

  // Runs last in this file: the scenarios above each produced their event.
  it('emitted an observability event for every decision the scenarios above exercised', () => {
    const seen = new Set(events.map((e) => e.type));
    for (const type of [
      'created',
      'replayed',
      'in_use',
      'reused',
      'unknown',
      'released',
      'completed',
      'lease_taken_over',
      'lease_lost',
      'rate_limited',
    ] as const) {
      expect(seen, type).toContain(type);
    }
    expect(events.every((e) => e.type === 'rate_limited' || e.tenantId !== undefined)).toBe(true);
  });
});
