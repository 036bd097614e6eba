import { setTimeout as sleep } from 'node:timers/promises';
import type { SqlRunner } from '@once/postgres/sql';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUTBOX_NOTIFY_CHANNEL } from '../schema/outbox.ts';
import type { TestDatabase } from '../testing/test-database.ts';
import { claimDueJobs } from './claim.ts';
import { enqueueOutboxJob, type NewOutboxJob } from './enqueue.ts';
import type { OutboxJobPayloads } from './job-kinds.ts';
import { createOutboxTestDatabase, OUTBOX_TEST_TENANT as TENANT } from './outbox-test-database.ts';

let database: TestDatabase;
const heard: string[] = [];
let unlisten: () => Promise<void>;

beforeAll(async () => {
  database = await createOutboxTestDatabase('outbox_enqueue');
  const listening = await database.client.sql.listen(OUTBOX_NOTIFY_CHANNEL, (payload) => {
    heard.push(payload);
  });
  unlisten = listening.unlisten;
}, 60_000);
afterAll(async () => {
  await unlisten?.();
  await database?.drop();
});

let next = 0;
function chargeJob(payload: OutboxJobPayloads['charge_payment']): NewOutboxJob {
  const n = ++next;
  return {
    tenantId: TENANT,
    id: `job_${n}`,
    kind: 'charge_payment',
    paymentId: `pay_${n}`,
    downstreamKey: `charge:pay_${n}`,
    payload,
  };
}

/** Notifications arrive after the commit, asynchronously: wait until `count` are in. */
async function heardAtLeast(count: number): Promise<string[]> {
  for (let i = 0; i < 50 && heard.length < count; i++) await sleep(20);
  return heard.splice(0);
}

describe('enqueueOutboxJob', () => {
  it('writes the same job and NOTIFYs the same payload from either driver, after the commit only', async () => {
    const { sql: pg, db: drizzle } = database.client;
    const payload = fc.record(
      {
        amount: fc.integer({ min: 1, max: 1_000_000 }),
        currency: fc.constantFrom('usd', 'eur'),
        paymentMethod: fc.string({ maxLength: 30 }),
      },
      { requiredKeys: ['amount', 'currency'] },
    );
    await fc.assert(
      fc.asyncProperty(payload, fc.boolean(), async (written, onDrizzle) => {
        const job = chargeJob(written);
        const inTransaction = (work: (tx: SqlRunner) => Promise<void>) =>
          onDrizzle ? drizzle.transaction(work) : pg.begin(work);
        await inTransaction((tx) => enqueueOutboxJob(tx, job));
        expect(await heardAtLeast(1)).toEqual([
          JSON.stringify({ tenantId: TENANT, jobId: job.id }),
        ]);
        const [row] = await pg<
          { status: string; kind: string; payload: unknown; max_attempts: number }[]
        >`select status, kind, payload, max_attempts from outbox_jobs where id = ${job.id}`;
        // jsonb, an object (not a JSON string), as written; the table's default attempts.
        expect(row).toEqual({
          status: 'pending',
          kind: 'charge_payment',
          payload: written,
          max_attempts: 8,
        });
      }),
      { numRuns: 20 },
    );
  });

  it('leaves no job and no notification when its transaction rolls back', async () => {
    const job = chargeJob({ amount: 100, currency: 'usd' });
    const rolledBack = database.client.sql.begin(async (tx) => {
      await enqueueOutboxJob(tx, job);
      throw new Error('the payment failed');
    });
    await expect(rolledBack).rejects.toThrow('the payment failed');
    await sleep(200);
    expect(heard.splice(0)).toEqual([]);
    const rows = await database.client.sql`select 1 from outbox_jobs where id = ${job.id}`;
    expect(rows).toHaveLength(0);
  });

  it('without NOTIFY writes the job all the same, with its max attempts, and it can be claimed', async () => {
    const job = { ...chargeJob({ amount: 100, currency: 'usd' }), maxAttempts: 3 };
    await enqueueOutboxJob(database.client.db, job, { notify: false });
    await sleep(200);
    expect(heard.splice(0)).toEqual([]);
    const claims = await claimDueJobs(database.client.sql, {
      workerId: 'w1',
      leaseMs: 60_000,
      limit: 100,
      kinds: ['charge_payment'],
    });
    const claimed = claims.find((claim) => claim.job.id === job.id);
    expect(claimed?.job).toMatchObject({ maxAttempts: 3, attempts: 1, kind: 'charge_payment' });
  });
});
