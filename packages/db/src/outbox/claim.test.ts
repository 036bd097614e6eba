import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestDatabase } from '../testing/test-database.ts';
import { claimDueJobs, msUntilNextClaimable } from './claim.ts';
import { enqueueOutboxJob } from './enqueue.ts';
import { createOutboxTestDatabase, OUTBOX_TEST_TENANT as TENANT } from './outbox-test-database.ts';

let database: TestDatabase;

beforeAll(async () => {
  database = await createOutboxTestDatabase('outbox_claim');
}, 60_000);
afterAll(async () => {
  await database?.drop();
});
beforeEach(async () => {
  await database.client.sql`delete from outbox_jobs`;
});

async function enqueueCharge(id: string): Promise<void> {
  await enqueueOutboxJob(
    database.client.sql,
    {
      tenantId: TENANT,
      id,
      kind: 'charge_payment',
      paymentId: `pay_${id}`,
      downstreamKey: `charge:pay_${id}`,
      payload: { amount: 100, currency: 'usd' },
    },
    { notify: false },
  );
}

const claimOptions = { workerId: 'w1', leaseMs: 60_000, limit: 10 };

describe('claimDueJobs', () => {
  it('claims only the kinds it is given: a job of a kind this worker cannot run waits for one that can', async () => {
    const { sql } = database.client;
    await enqueueCharge('job_charge');
    // A kind a newer release added (the column is open; its CHECK lists statuses, not kinds).
    await sql`
      insert into outbox_jobs (tenant_id, id, kind, payment_id, downstream_key)
      values (${TENANT}, 'job_refund', 'refund_payment', 'pay_refund', 'refund:pay_refund')`;
    const claims = await claimDueJobs(sql, { ...claimOptions, kinds: ['charge_payment'] });
    expect(claims.map((claim) => [claim.job.id, claim.job.kind])).toEqual([
      ['job_charge', 'charge_payment'],
    ]);
    const [refund] = await sql`select status, attempts from outbox_jobs where id = 'job_refund'`;
    expect(refund).toEqual({ status: 'pending', attempts: 0 });
  });

  it('reads the claim alike on both drivers: lease end a Date, payload an object', async () => {
    await enqueueCharge('job_a');
    await enqueueCharge('job_b');
    const kinds = ['charge_payment'] as const;
    const [onDrizzle] = await claimDueJobs(database.client.db, {
      ...claimOptions,
      limit: 1,
      kinds,
    });
    const [onPostgresJs] = await claimDueJobs(database.client.sql, { ...claimOptions, kinds });
    for (const claim of [onDrizzle, onPostgresJs]) {
      expect(claim?.job.lockedUntil).toBeInstanceOf(Date);
      expect(claim?.job.lockedUntil.getTime()).toBeGreaterThan(Date.now() + 50_000);
      expect(claim?.job.payload).toEqual({ amount: 100, currency: 'usd' });
      expect(claim).toMatchObject({ takeover: false, previousWorker: null });
    }
  });
});

describe('msUntilNextClaimable', () => {
  it('is null with nothing waiting, 0 for a due job, and the time to the next run_after or lease end', async () => {
    const { sql } = database.client;
    expect(await msUntilNextClaimable(sql)).toBeNull();
    await enqueueCharge('job_due');
    expect(await msUntilNextClaimable(sql)).toBe(0);
    await sql`update outbox_jobs set run_after = now() + interval '30 seconds'`;
    const untilRun = await msUntilNextClaimable(database.client.db);
    expect(untilRun).toBeGreaterThan(25_000);
    expect(untilRun).toBeLessThanOrEqual(30_000);
    await sql`update outbox_jobs set status = 'running', locked_until = now() + interval '10 seconds'`;
    const untilLeaseEnd = await msUntilNextClaimable(sql);
    expect(untilLeaseEnd).toBeGreaterThan(5_000);
    expect(untilLeaseEnd).toBeLessThanOrEqual(10_000);
  });
});
