import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionStartLimiter } from './session-start-limit.ts';

const LIMITS = { perAddress: 5, perTenant: 0, windowMs: 60_000 };

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase('api_session_start_race');
});
afterAll(async () => {
  await database?.drop();
});

/**
 * Several webs count one burst of one address at once, and one attempt begins before them but
 * reaches the row after them (its transaction began, then waited): each must be judged at the
 * time it holds the row, or the latecomer meets an arrival time ahead of its own clock and
 * loses its place in the burst.
 */
describe('session starts racing inside one burst', () => {
  it('admit exactly the allowance per address, a latecomer that began first included', async () => {
    const webs = Array.from(
      { length: 3 },
      () => new SessionStartLimiter(database.client.db, LIMITS),
    );
    let begun = () => {};
    const lateBegun = new Promise<void>((resolve) => (begun = resolve));
    const late = database.client.db.transaction(async (tx) => {
      await tx.execute(sql`select 1`);
      const waiting = tx.execute(sql`select pg_sleep(0.3)`);
      const admitted = new SessionStartLimiter(tx, LIMITS).admitAttempt('198.51.100.7');
      begun();
      await waiting;
      return admitted;
    });
    await lateBegun;
    const [burst, other] = await Promise.all([
      Promise.all(
        Array.from({ length: LIMITS.perAddress - 1 }, (_, i) =>
          webs[i % 3]!.admitAttempt('198.51.100.7'),
        ),
      ),
      Promise.all(Array.from({ length: 8 }, (_, i) => webs[i % 3]!.admitAttempt('198.51.100.8'))),
    ]);
    const admittedOf = (results: unknown[]) => results.filter((r) => r === undefined).length;
    expect(admittedOf(burst)).toBe(LIMITS.perAddress - 1);
    expect(admittedOf(other)).toBe(LIMITS.perAddress);
    expect(await late).toBeUndefined();
    // The allowance is spent: the next attempt waits at most one interval.
    expect(await webs[0]!.admitAttempt('198.51.100.7')).toMatchObject({
      limit: 'address',
      retryAfterSeconds: LIMITS.windowMs / LIMITS.perAddress / 1000,
    });
  });

  it('a first attempt whose transaction began over an interval earlier is timed as it counts', async () => {
    // One every second: an arrival time from the transaction's start would lie in the past.
    const limits = { perAddress: 2, perTenant: 0, windowMs: 2_000 };
    const first = await database.client.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_sleep(1.2)`);
      return new SessionStartLimiter(tx, limits).admitAttempt('198.51.100.9');
    });
    const web = new SessionStartLimiter(database.client.db, limits);
    const then = [await web.admitAttempt('198.51.100.9'), await web.admitAttempt('198.51.100.9')];
    expect([first, ...then].filter((r) => r === undefined)).toHaveLength(limits.perAddress);
  });
});
