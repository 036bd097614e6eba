import { seedDemoData } from '@once/db/seed';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperatorSessions } from './operator-sessions.ts';

// "The database is away" is another connection holding `operator_sessions` locked against
// every read (a read waits until lock_timeout).
let database: TestDatabase;
let now = Date.parse('2031-05-01T08:00:00Z');
const clock = { now: () => new Date(now) };
const options = { readDeadlineMs: 300, outageGraceMs: 10 * 60_000 };

beforeAll(async () => {
  database = await createTestDatabase('api_operator_sessions_store');
  await seedDemoData(database.client.db);
}, 60_000);
afterAll(async () => {
  await database.drop();
});

async function whileSessionsLocked<T>(body: () => Promise<T>): Promise<T> {
  let result: T | undefined;
  await database.client.sql.begin(async (tx) => {
    await tx`lock table operator_sessions in access exclusive mode`;
    result = await body();
  });
  return result as T;
}

describe('OperatorSessions while the database cannot be read', () => {
  it('a session this process confirmed lately is answered from that; one it never saw is not', async () => {
    const sessions = new OperatorSessions(database.client.db, clock, options);
    const { id } = await sessions.open({ tenantId: 'tenant_a', credential: 'operator_code' });
    const elsewhere = new OperatorSessions(database.client.db, clock, options);
    expect(await elsewhere.find('tenant_a', id)).toMatchObject({ credential: 'operator_code' });
    const stranger = new OperatorSessions(database.client.db, clock, {
      ...options,
      readDeadlineMs: 100,
    });

    now += 9 * 60_000;
    const fromMemory = { orFromMemory: true };
    await whileSessionsLocked(async () => {
      expect(await sessions.find('tenant_a', id, fromMemory)).toMatchObject({ id });
      // Never confirmed here: nothing to answer from, so it waits for the database and fails.
      await expect(
        Promise.race([
          stranger.find('tenant_a', id, fromMemory),
          new Promise((_, reject) => setTimeout(() => reject(new Error('still waiting')), 800)),
        ]),
      ).rejects.toThrow('still waiting');
    });

    // Past the grace since the last confirmation, an unreadable row is an error, not a yes.
    now += 11 * 60_000;
    await whileSessionsLocked(async () => {
      await expect(elsewhere.find('tenant_a', id, fromMemory)).rejects.toThrow(/did not answer/);
    });
  }, 30_000);

  it('a session ended on another process is refused when one read loses its connection and the database still answers', async () => {
    const here = new OperatorSessions(database.client.db, clock, {
      ...options,
      readDeadlineMs: 5_000,
    });
    const { id } = await here.open({ tenantId: 'tenant_a', credential: 'operator_code' });
    await new OperatorSessions(database.client.db, clock, options).end('tenant_a', id);
    let found: Promise<unknown> | undefined;
    await database.client.sql.begin(async (tx) => {
      await tx`lock table operator_sessions in access exclusive mode`;
      found = here.find('tenant_a', id, { orFromMemory: true });
      // The read waits on the lock; its connection is cut (a failover's first error, a pooler's
      // hiccup) while the database goes on answering.
      for (let cut = 0; cut === 0; ) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const [row] = await tx<{ cut: number }[]>`
          select count(pg_terminate_backend(pid))::int as cut from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`;
        cut = row?.cut ?? 0;
      }
    });
    expect(await found).toBeUndefined();
  }, 30_000);

  it('without orFromMemory (money, keys, every read of data) a session is what the database says, never what this process remembers', async () => {
    const here = new OperatorSessions(database.client.db, clock, options);
    const { id } = await here.open({ tenantId: 'tenant_a', credential: 'operator_code' });
    // Ended on another web; this one confirmed the session a moment ago.
    expect(await here.find('tenant_a', id)).toBeDefined();
    await new OperatorSessions(database.client.db, clock, options).end('tenant_a', id);
    let found: Promise<unknown> | undefined;
    await whileSessionsLocked(async () => {
      // The database is slow, not gone: the read waits for it past the memory's deadline.
      found = here.find('tenant_a', id);
      await new Promise((resolve) => setTimeout(resolve, options.readDeadlineMs * 2));
    });
    expect(await found).toBeUndefined();
  }, 30_000);

  it('an ended session is refused at once, by the process that ended it and by any other', async () => {
    const here = new OperatorSessions(database.client.db, clock, options);
    const there = new OperatorSessions(database.client.db, clock, options);
    const { id } = await here.open({ tenantId: 'tenant_b', credential: 'operator_code' });
    expect(await there.find('tenant_b', id)).toBeDefined();
    await here.end('tenant_b', id);
    expect(await here.find('tenant_b', id)).toBeUndefined();
    expect(await there.find('tenant_b', id)).toBeUndefined();
  });
});
