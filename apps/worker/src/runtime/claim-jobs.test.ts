import { renewLease } from '@once/db/outbox';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { recordChargeOutcome } from '../test-support/record-charge-outcome.ts';
import { seedCheckout, seedTenants } from '../test-support/seed-checkouts.ts';
import { claimJobs } from './claim-jobs.ts';

const backoff = { baseMs: 60_000, maxMs: 120_000 };
let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase('worker_claim');
  await seedTenants(database.client.sql);
});
afterAll(async () => {
  await database?.drop();
});
beforeEach(async () => {
  await database.client.sql`delete from outbox_jobs`;
  await database.client.sql`delete from payments`;
});

describe('claimJobs', () => {
  it('gives each of 40 jobs to exactly one of 8 concurrent claimers', async () => {
    const { sql } = database.client;
    const seeded = await Promise.all(Array.from({ length: 40 }, () => seedCheckout(sql)));
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        claimJobs(sql, { workerId: `w${index}`, leaseMs: 60_000, limit: 7 }),
      ),
    );
    const claimedIds = claims.flat().map((job) => job.id);
    // 8 x 7 = 56 slots for 40 jobs: every job claimed, none twice.
    expect(new Set(claimedIds).size).toBe(claimedIds.length);
    expect(claimedIds.sort()).toEqual(seeded.map((s) => s.jobId).sort());
    const [row] =
      await sql`select count(*)::int as n from outbox_jobs where status = 'running' and attempts = 1`;
    expect(row?.n).toBe(40);
  });

  it('does not claim jobs whose run_after is in the future or whose lease is live', async () => {
    const { sql } = database.client;
    const later = await seedCheckout(sql);
    await sql`update outbox_jobs set run_after = now() + interval '1 hour' where id = ${later.jobId}`;
    await seedCheckout(sql);
    const first = await claimJobs(sql, { workerId: 'w1', leaseMs: 60_000, limit: 10 });
    expect(first).toHaveLength(1);
    const second = await claimJobs(sql, { workerId: 'w2', leaseMs: 60_000, limit: 10 });
    expect(second).toHaveLength(0);
  });

  it('re-claims an expired lease exactly once, with a new token, among concurrent claimers', async () => {
    const { sql } = database.client;
    const seeded = await seedCheckout(sql);
    const [old] = await claimJobs(sql, { workerId: 'stalled', leaseMs: 60_000, limit: 1 });
    await sql`update outbox_jobs set locked_until = now() - interval '1 second' where id = ${seeded.jobId}`;
    const claims = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        claimJobs(sql, { workerId: `w${index}`, leaseMs: 60_000, limit: 1 }),
      ),
    );
    const winners = claims.flat();
    expect(winners).toHaveLength(1);
    expect(winners[0]?.lockToken).not.toBe(old?.lockToken);
    expect(winners[0]?.attempts).toBe(2);
  });

  it("refuses the old holder's finish and lease renewal after a takeover", async () => {
    const { sql } = database.client;
    const seeded = await seedCheckout(sql);
    const [old] = await claimJobs(sql, { workerId: 'stalled', leaseMs: 60_000, limit: 1 });
    await sql`update outbox_jobs set locked_until = now() - interval '1 second' where id = ${seeded.jobId}`;
    const [current] = await claimJobs(sql, { workerId: 'fresh', leaseMs: 60_000, limit: 1 });
    if (!old || !current) throw new Error('claims failed');

    expect(await renewLease(sql, old, 60_000)).toBe(false);
    const stale = await recordChargeOutcome(
      sql,
      old,
      { kind: 'declined', code: 'card_declined' },
      backoff,
    );
    expect(stale).toEqual({ job: 'lease_lost' });
    const [untouched] = await sql`select status from payments where id = ${seeded.paymentId}`;
    expect(untouched?.status).toBe('processing');

    expect(await renewLease(sql, current, 60_000)).toBe(true);
    const fresh = await recordChargeOutcome(
      sql,
      current,
      { kind: 'succeeded', paymentIntentId: 'pi_1' },
      backoff,
    );
    expect(fresh).toEqual({ job: 'done' });
    const [payment] = await sql`
      select status, processor_payment_intent_id from payments where id = ${seeded.paymentId}`;
    expect(payment).toEqual({ status: 'succeeded', processor_payment_intent_id: 'pi_1' });
    const [job] = await sql`select status, lock_token from outbox_jobs where id = ${seeded.jobId}`;
    expect(job).toEqual({ status: 'done', lock_token: null });

    // The timeline tells the takeover, and only the holder's outcome: the stale finish wrote nothing.
    const events = await sql<{ actor: string; kind: string; detail: Record<string, unknown> }[]>`
      select actor, kind, detail from payment_events
      where payment_id = ${seeded.paymentId} order by seq`;
    expect(events.map((e) => [e.actor, e.kind])).toEqual([
      ['worker:stalled', 'job.claimed'],
      ['worker:fresh', 'job.claimed'],
      ['worker:fresh', 'outcome.recorded'],
    ]);
    expect(events[0]?.detail).toMatchObject({ attempt: 1, takeover: false });
    expect(events[1]?.detail).toMatchObject({
      attempt: 2,
      takeover: true,
      previousWorker: 'stalled',
    });
  });
});

describe('recordChargeOutcome', () => {
  it('puts an ambiguous attempt back to pending with backoff, keeping the downstream key', async () => {
    const { sql } = database.client;
    const seeded = await seedCheckout(sql, { maxAttempts: 2 });
    const [job] = await claimJobs(sql, { workerId: 'w', leaseMs: 60_000, limit: 1 });
    if (!job) throw new Error('no job');
    const result = await recordChargeOutcome(
      sql,
      job,
      { kind: 'ambiguous', reason: 'timeout' },
      backoff,
    );
    expect(result.job).toBe('retry_scheduled');
    const [row] = await sql`
      select status, downstream_key, run_after > now() as later, last_error
      from outbox_jobs where id = ${seeded.jobId}`;
    expect(row).toEqual({
      status: 'pending',
      downstream_key: seeded.downstreamKey,
      later: true,
      last_error: 'timeout',
    });
  });

  it('never dead-letters on "still running at the processor": the claim is given back', async () => {
    const { sql } = database.client;
    // Only this test's job is claimable.
    await sql`update outbox_jobs set status = 'done' where status in ('pending', 'running')`;
    const seeded = await seedCheckout(sql, { maxAttempts: 1 });
    for (let round = 0; round < 3; round++) {
      await sql`update outbox_jobs set run_after = now() where id = ${seeded.jobId}`;
      const [job] = await claimJobs(sql, { workerId: 'w', leaseMs: 60_000, limit: 1 });
      if (job?.id !== seeded.jobId) throw new Error("not this test's job");
      const result = await recordChargeOutcome(
        sql,
        job,
        { kind: 'in_flight', reason: 'http_409_idempotency_key_in_use' },
        backoff,
      );
      expect(result.job).toBe('retry_scheduled');
    }
    const [row] = await sql`select status, attempts from outbox_jobs where id = ${seeded.jobId}`;
    expect(row).toEqual({ status: 'pending', attempts: 0 });
    const [payment] = await sql`select status from payments where id = ${seeded.paymentId}`;
    expect(payment?.status).toBe('processing');
  });

  it('dead-letters after max_attempts and marks the payment unknown', async () => {
    const { sql } = database.client;
    const seeded = await seedCheckout(sql, { maxAttempts: 1 });
    const [job] = await claimJobs(sql, { workerId: 'w', leaseMs: 60_000, limit: 1 });
    if (!job) throw new Error('no job');
    const result = await recordChargeOutcome(
      sql,
      job,
      { kind: 'ambiguous', reason: 'reset' },
      backoff,
    );
    expect(result).toEqual({ job: 'dead' });
    const [payment] =
      await sql`select status, failure_code from payments where id = ${seeded.paymentId}`;
    expect(payment).toEqual({ status: 'unknown', failure_code: 'retries_exhausted' });
  });

  it('never moves a terminal payment', async () => {
    const { sql } = database.client;
    const seeded = await seedCheckout(sql);
    await sql`update payments set status = 'declined' where id = ${seeded.paymentId}`;
    const [job] = await claimJobs(sql, { workerId: 'w', leaseMs: 60_000, limit: 1 });
    if (!job) throw new Error('no job');
    await recordChargeOutcome(sql, job, { kind: 'succeeded', paymentIntentId: 'pi_x' }, backoff);
    const [payment] = await sql`select status from payments where id = ${seeded.paymentId}`;
    expect(payment?.status).toBe('declined');
  });
});
