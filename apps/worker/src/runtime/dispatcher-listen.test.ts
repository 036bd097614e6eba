import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import type postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedCheckout, seedTenants } from '../test-support/seed-checkouts.ts';
import { startDispatcher } from './dispatcher.ts';

// The dispatcher's LISTEN outlives its connection: after the listening backend is terminated,
// and after an outage in which postgres.js's own single re-LISTEN was lost (a failover: no
// primary for a few seconds), a new job is still claimed at once by its NOTIFY, not by the
// fallback poll (a minute here, so only a NOTIFY can be that quick).
let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase('worker_listen');
  await seedTenants(database.client.sql);
});
afterAll(async () => {
  await database?.drop();
});

const POLL_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The pool, with one lever: `outageAtNextClaim()` makes the next transaction fail as a lost
 * connection does and, at that moment, stops the notifications of every LISTEN made so far
 * from reaching the dispatcher (what a re-LISTEN lost during the outage leaves).
 */
function pool(sql: postgres.Sql) {
  let generation = 0;
  let armed = false;
  const proxy = new Proxy(sql, {
    get(target, property, receiver) {
      if (property === 'listen') {
        return (channel: string, onNotify: (p: string) => void, onListen?: () => void) => {
          const mine = generation;
          return target.listen(
            channel,
            (payload) => mine === generation && onNotify(payload),
            onListen,
          );
        };
      }
      if (property === 'begin' && armed) {
        armed = false;
        generation++;
        return async () => {
          throw Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' });
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
  return {
    sql: proxy,
    outageAtNextClaim: () => {
      armed = true;
    },
  };
}

async function claimedWithin(jobId: string, ms: number): Promise<number | undefined> {
  const started = Date.now();
  while (Date.now() - started < ms) {
    const [row] = await database.client.sql<{ attempts: number }[]>`
      select attempts from outbox_jobs where id = ${jobId}`;
    if ((row?.attempts ?? 0) > 0) return Date.now() - started;
    await sleep(25);
  }
  return undefined;
}

function start(sql: postgres.Sql, events: string[]) {
  return startDispatcher({
    sql,
    workerId: 'w-listen',
    concurrency: 2,
    pollIntervalMs: POLL_MS,
    leaseMs: 30_000,
    backoff: { baseMs: 60_000, maxMs: 60_000 },
    processorFor: () => {
      throw new Error('no processor in this test');
    },
    log: (event) => events.push(event),
  });
}

describe('the dispatcher LISTEN after its connection is lost', () => {
  it('pg_terminate_backend of the listening connection: the next job is still claimed at once', async () => {
    const events: string[] = [];
    const dispatcher = start(database.client.sql, events);
    try {
      await sleep(300);
      const terminated = await database.client.sql`
        select pg_terminate_backend(pid) from pg_stat_activity
        where datname = current_database() and query ilike 'listen %'`;
      expect(terminated.length).toBe(1);
      await sleep(500);
      const seeded = await seedCheckout(database.client.sql);
      const waited = await claimedWithin(seeded.jobId, 5_000);
      expect(waited, events.join(' ')).toBeDefined();
    } finally {
      await dispatcher.stop(1_000);
    }
  });

  it('an outage that lost the re-LISTEN: after the next good claim it subscribes again', async () => {
    const events: string[] = [];
    const lever = pool(database.client.sql);
    const dispatcher = start(lever.sql, events);
    try {
      await sleep(300);
      lever.outageAtNextClaim();
      // Its NOTIFY wakes a claim round that meets the outage, retries and succeeds.
      const first = await seedCheckout(database.client.sql);
      expect(await claimedWithin(first.jobId, 5_000)).toBeDefined();
      await sleep(500);
      const seeded = await seedCheckout(database.client.sql);
      const waited = await claimedWithin(seeded.jobId, 5_000);
      expect(waited, events.join(' ')).toBeDefined();
      expect(events).toContain('listen.resubscribing');
    } finally {
      await dispatcher.stop(1_000);
    }
  });
});
