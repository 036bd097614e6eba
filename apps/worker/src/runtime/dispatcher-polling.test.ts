import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import type postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedCheckout, seedTenants } from '../test-support/seed-checkouts.ts';
import { startDispatcher } from './dispatcher.ts';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase('worker_polling');
  await seedTenants(database.client.sql);
});
afterAll(async () => {
  await database?.drop();
});

/**
 * The pool as an engine without LISTEN/NOTIFY presents it (CockroachDB, PgBouncer in
 * transaction mode): every query works, LISTEN is refused. Counts the attempts, and records
 * each transaction it begins (every claim round is one) in `timeline`.
 */
function withoutListen(sql: postgres.Sql, timeline: string[]) {
  const attempts = { listen: 0 };
  const proxy = new Proxy(sql, {
    get(target, property, receiver) {
      if (property === 'listen') {
        return async () => {
          attempts.listen++;
          throw Object.assign(new Error('LISTEN is not supported'), { code: '0A000' });
        };
      }
      if (property === 'begin') {
        return (...args: unknown[]) => {
          timeline.push('transaction');
          return (target.begin as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
  return { sql: proxy, attempts };
}

describe('the dispatcher with NOTIFY off (listen: false)', () => {
  it('never LISTENs, and the poll alone claims a job within the poll interval', async () => {
    // One ordered record of what happened: transactions begun (claim rounds), the seed, the
    // dispatcher's own events. The bound is counted in poll rounds, not wall-clock time.
    const events: string[] = [];
    const { sql, attempts } = withoutListen(database.client.sql, events);
    const dispatcher = startDispatcher({
      sql,
      workerId: 'w-polling',
      concurrency: 2,
      pollIntervalMs: 200,
      listen: false,
      leaseMs: 30_000,
      backoff: { baseMs: 60_000, maxMs: 60_000 },
      // The charge itself is not what this test is about: the processor is unreachable, the
      // job is claimed, tried once and scheduled again.
      processorFor: () => {
        throw new Error('no processor in this test');
      },
      log: (event) => events.push(event),
    });
    try {
      // Let the first (empty) claim pass, so only the poll can find the next job.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const seeded = await seedCheckout(database.client.sql);
      events.push('seeded');
      const started = Date.now();
      let attemptsMade = 0;
      while (attemptsMade === 0 && Date.now() - started < 5_000) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const [row] = await database.client.sql<{ attempts: number }[]>`
          select attempts from outbox_jobs where id = ${seeded.jobId}`;
        attemptsMade = row?.attempts ?? 0;
      }
      const waitedMs = Date.now() - started;
      console.log(
        `NOTIFY off: job claimed by the poll after ${waitedMs} ms (poll interval 200 ms)`,
      );
      expect(attemptsMade).toBe(1);
      // Claimed by the first poll round that began after the seed committed, or the next one
      // (a round already reading when the seed committed may miss it): at most two rounds,
      // so at most two poll intervals, however slow the machine.
      const seededAt = events.indexOf('seeded');
      const claimedAt = events.indexOf('job.claimed', seededAt);
      expect(claimedAt).toBeGreaterThan(seededAt);
      const rounds = events.slice(seededAt, claimedAt).filter((e) => e === 'transaction').length;
      expect(rounds, events.join(' ')).toBeLessThanOrEqual(2);
      // The rounds are the poll's: the dispatcher never listened, nothing woke it.
      expect(attempts.listen).toBe(0);
      expect(events).not.toContain('listen.failed');
    } finally {
      await dispatcher.stop(1_000);
    }
  });
});
