import { installDatabaseClock } from '@once/postgres/testing';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdempotencyStore } from '../../core/types.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { reapExpiredKeys } from './reaper.ts';
import { createDrizzleStore } from './store.ts';

/**
 * The new-key cap slides: the database clock is moved (no sleeps) to just before a minute
 * boundary, where a fixed window would start afresh, and past the `retryAfterSeconds` a refusal
 * gives. Cap 3 per minute: one more key every 20 s after a burst of 3.
 */
const LIMIT = { maxNewKeys: 3, windowMs: 60_000 };
const INTERVAL_MS = LIMIT.windowMs / LIMIT.maxNewKeys;

let t: IdempotencyTestDatabase;
let clock: Awaited<ReturnType<typeof installDatabaseClock>>;
/** Connections opened after the clock was installed: their `now()` is the test's. */
let clocked: postgres.Sql;
let store: IdempotencyStore<unknown>;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('rate_window');
  clock = await installDatabaseClock(t.sql);
  clocked = postgres(t.url, { max: 40, onnotice: () => {} });
  store = createDrizzleStore(drizzle(clocked)) as IdempotencyStore<unknown>;
});
afterAll(async () => {
  await clocked?.end({ timeout: 1 });
  await t?.drop();
});

let principals = 0;
const newScope = () => ({ tenantId: 'tenant', principal: `p-${++principals}` });

/** Count `n` new keys one after another; how many were admitted. */
async function admitted(scope: { tenantId: string; principal: string }, n: number) {
  let admitted = 0;
  for (let i = 0; i < n; i++) if (!(await store.countNewKey(scope, LIMIT)).limited) admitted++;
  return admitted;
}

describe('the new-key cap on a sliding window (database clock moved, no sleeps)', () => {
  it('a burst just before a minute boundary and one just after admit the cap once, not twice', async () => {
    const [row] = await clocked<{ ms: number }[]>`
      select (extract(epoch from now()) * 1000)::float8 as ms`;
    const toBoundary = LIMIT.windowMs - ((row?.ms ?? 0) % LIMIT.windowMs);
    await clock.pass(toBoundary - 200);
    const scope = newScope();
    expect(await admitted(scope, LIMIT.maxNewKeys + 2)).toBe(LIMIT.maxNewKeys);
    await clock.pass(400);
    expect(await admitted(scope, LIMIT.maxNewKeys + 2)).toBe(0);
  });

  it('a refusal says when one more fits: refused a second earlier, admitted then, once', async () => {
    const scope = newScope();
    expect(await admitted(scope, LIMIT.maxNewKeys)).toBe(LIMIT.maxNewKeys);
    const refused = await store.countNewKey(scope, LIMIT);
    expect(refused).toEqual({ limited: true, retryAfterSeconds: INTERVAL_MS / 1000 });
    expect(await store.peekNewKeys(scope, LIMIT)).toEqual(refused);
    await clock.pass(INTERVAL_MS - 1000);
    expect(await store.countNewKey(scope, LIMIT)).toEqual({ limited: true, retryAfterSeconds: 1 });
    await clock.pass(1000);
    expect(await store.peekNewKeys(scope, LIMIT)).toEqual({ limited: false });
    expect(await admitted(scope, 2)).toBe(1);
    // A whole window later the whole burst is back, and no more.
    await clock.pass(LIMIT.windowMs);
    expect(await admitted(scope, LIMIT.maxNewKeys + 1)).toBe(LIMIT.maxNewKeys);
  });

  it('a count given back frees one place at once; give-backs never make room beyond the cap', async () => {
    const scope = newScope();
    expect(await admitted(scope, LIMIT.maxNewKeys)).toBe(LIMIT.maxNewKeys);
    await store.giveBackNewKey?.(scope, LIMIT);
    expect(await admitted(scope, 2)).toBe(1);
    const idle = newScope();
    for (let i = 0; i < 5; i++) await store.giveBackNewKey?.(idle, LIMIT);
    expect(await admitted(idle, LIMIT.maxNewKeys + 2)).toBe(LIMIT.maxNewKeys);
    // Half a window later, five give-backs free what was counted, not more.
    await clock.pass(LIMIT.windowMs / 2);
    for (let i = 0; i < 5; i++) await store.giveBackNewKey?.(idle, LIMIT);
    expect(await admitted(idle, LIMIT.maxNewKeys + 2)).toBe(LIMIT.maxNewKeys);
  });

  it('40 concurrent counts of one principal admit the cap, and no refusal asks to wait past one interval', async () => {
    for (const fresh of [true, false]) {
      const scope = newScope();
      if (!fresh) await store.countNewKey(scope, LIMIT);
      await Promise.all(Array.from({ length: 40 }, () => clocked`select 1`));
      const counts = await Promise.all(
        Array.from({ length: 40 }, () => store.countNewKey(scope, LIMIT)),
      );
      expect(counts.filter((c) => !c.limited)).toHaveLength(LIMIT.maxNewKeys - (fresh ? 0 : 1));
      // A refusal decided against a clock read before the last place was taken says less.
      for (const count of counts)
        if (count.limited) expect(count.retryAfterSeconds).toBeLessThanOrEqual(INTERVAL_MS / 1000);
      expect(await store.countNewKey(scope, LIMIT)).toEqual({
        limited: true,
        retryAfterSeconds: INTERVAL_MS / 1000,
      });
    }
  });

  it('the reaper deletes the rows whose arrival time is past, and only those', async () => {
    const [spent, idle] = [newScope(), newScope()];
    await store.countNewKey(idle, LIMIT);
    await clock.pass(INTERVAL_MS);
    expect(await admitted(spent, LIMIT.maxNewKeys)).toBe(LIMIT.maxNewKeys);
    await reapExpiredKeys(drizzle(clocked));
    const rows = await clocked<{ principal: string }[]>`
      select principal from idempotency_rate_limits where principal in (${spent.principal}, ${idle.principal})`;
    expect(rows).toEqual([{ principal: spent.principal }]);
    expect(await admitted(spent, 1)).toBe(0);
  });
});
