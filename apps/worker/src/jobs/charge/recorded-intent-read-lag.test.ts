import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import type postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerChargesFor } from '../../test-support/convergence.ts';
import { type RunningProcess, startWorkerProcess } from '../../test-support/processes.ts';
import { type ProcessorUnderTest, startProcessorUnderTest } from '../../test-support/processor.ts';
import { seedCheckout, seedTenants } from '../../test-support/seed-checkouts.ts';

// Regression: a 404 when the worker retrieves the intent IT recorded (the processor's reads
// lag behind its writes) used to be a definite refusal: the job died at once and a charged
// payment sat `unknown` until the reconciler (in production up to an hour of backoff).
// Real processes: the mock processor (its `lag_ms` hides the intent from reads by id) and a
// worker whose reconciler is kept out of the way, so only the job's own retries can settle.

let app: TestDatabase;
let processor: ProcessorUnderTest;
let worker: RunningProcess;

beforeAll(async () => {
  app = await createTestDatabase('worker_read_lag');
  await seedTenants(app.client.sql);
  processor = await startProcessorUnderTest('worker_read_lag_processor');
  worker = await startWorkerProcess(
    {
      DATABASE_URL: app.url,
      PROCESSOR_URL: processor.url,
      WORKER_BACKOFF_BASE_MS: '300',
      WORKER_BACKOFF_MAX_MS: '1500',
      // Far away: a payment that ends settled here was settled by its job, not the reconciler.
      WORKER_RECONCILE_AFTER_MS: '600000',
    },
    'w-read-lag',
  );
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await processor?.close();
  await app?.drop();
});

/** Waits until the payment's only job is finished (done or dead); returns job and payment. */
async function waitForJobEnd(sql: postgres.Sql, paymentId: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await sql<
      { job: string; attempts: number; last_error: string | null; payment: string; code: string }[]
    >`
      select job.status as job, job.attempts, job.last_error, payment.status as payment,
             payment.failure_code as code
      from outbox_jobs as job join payments as payment
        on payment.tenant_id = job.tenant_id and payment.id = job.payment_id
      where job.payment_id = ${paymentId}`;
    if (row && (row.job === 'done' || row.job === 'dead')) return row;
    if (Date.now() > deadline) throw new Error(`job not finished: ${JSON.stringify(row)}`);
    await sleep(100);
  }
}

/** Uses of the faults armed since `before` (ids), per kind: the processor's own count. */
async function takenSince(before: Set<string>): Promise<Record<string, number>> {
  const rows = await processor.sql<{ id: string; kind: string; taken: number }[]>`
    select id, kind, taken from faults`;
  const taken: Record<string, number> = {};
  for (const r of rows.filter((r) => !before.has(r.id)))
    taken[r.kind] = (taken[r.kind] ?? 0) + r.taken;
  return taken;
}
const faultIds = async () =>
  new Set((await processor.sql<{ id: string }[]>`select id from faults`).map((r) => r.id));

describe('a 404 retrieving the recorded intent means "cannot tell yet"', () => {
  it('retries with backoff until the intent is readable: succeeded by its own job, one charge', async () => {
    const { sql } = app.client;
    const before = await faultIds();
    // The confirm charges, its answer is a 500, and the intent's reads by id answer 404 for 3 s.
    await processor.armFault({
      kind: 'fail_after_charge',
      operation: 'payment_intents.confirm',
      lag_ms: 3_000,
    });
    const checkout = await seedCheckout(sql);
    const end = await waitForJobEnd(sql, checkout.paymentId);
    expect(end).toMatchObject({ job: 'done', payment: 'succeeded' });
    // Attempt 1 confirmed (500), at least one more read a 404, the last read the intent.
    expect(end.attempts).toBeGreaterThanOrEqual(3);
    // Never parked `unknown` on the way.
    const unknown = await sql`
      select 1 from payment_events
      where payment_id = ${checkout.paymentId} and kind = 'outcome.recorded'
        and detail->>'jobNow' = 'dead'`;
    expect(unknown).toHaveLength(0);
    expect(await ledgerChargesFor(processor.sql, checkout.paymentId)).toBe(1);
    // The faults bit: the confirm's 500, and at least one read answered 404 by the lag.
    const taken = await takenSince(before);
    expect(taken.fail_after_charge).toBe(1);
    expect(taken.not_found ?? 0).toBeGreaterThanOrEqual(1);
  });

  it('bounded: a 404 that never ends uses up the attempts, then the normal unknown path', async () => {
    const { sql } = app.client;
    const before = await faultIds();
    await processor.armFault({ kind: 'fail_after_charge', operation: 'payment_intents.confirm' });
    // Every read by id of the intent answers 404 (a read that never catches up).
    await processor.armFault({
      kind: 'not_found',
      method: 'GET',
      operation: 'payment_intents.retrieve',
      count: 1_000,
    });
    const checkout = await seedCheckout(sql, { maxAttempts: 3 });
    const end = await waitForJobEnd(sql, checkout.paymentId);
    expect(end).toMatchObject({ job: 'dead', attempts: 3, payment: 'unknown' });
    // Out of attempts (ambiguous all the way), not refused on the first 404.
    expect(end.code).toBe('retries_exhausted');
    expect(end.last_error).toMatch(/resource_missing/);
    // The confirm's 500 bit once, and every later attempt's read was a 404 of the fault.
    const taken = await takenSince(before);
    expect(taken.fail_after_charge).toBe(1);
    expect(taken.not_found ?? 0).toBeGreaterThanOrEqual(2);
    await processor.sql`delete from faults`;
    // Charged once; settling it is the reconciler's job now (kept away in this file).
    expect(await ledgerChargesFor(processor.sql, checkout.paymentId)).toBe(1);
    expect(worker.child.exitCode).toBeNull();
  });
});
