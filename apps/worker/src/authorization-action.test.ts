import { setTimeout as sleep } from 'node:timers/promises';
import { claimDueJobs } from '@once/db/outbox';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { verifyInvariant } from '@once/invariant';
import {
  adminClient,
  createProcessorTestDatabase,
  type RunningProcessor,
  startTestProcessor,
} from '@once/processor/testing';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChargePaymentDeps } from './charge-payment.ts';
import { handledJobKinds, runJob } from './job-handlers.ts';
import { createProcessorClients } from './processor-client.ts';
import {
  type SeededCheckout,
  seedAuthorizationAction,
  seedCheckout,
  seedTenants,
} from './test-support/seed-checkouts.ts';

// Manual capture end to end below the API: the worker's handlers, run in this process, against
// the real processor (in process too) and a real database; one of each for the whole file.
let app: TestDatabase;
let processorDb: { url: string; drop(): Promise<void> };
let processor: RunningProcessor;
let ledgerSql: postgres.Sql;
let deps: ChargePaymentDeps;

beforeAll(async () => {
  app = await createTestDatabase('worker_authorization_actions');
  await seedTenants(app.client.sql);
  processorDb = await createProcessorTestDatabase('worker_authorization_actions');
  processor = await startTestProcessor({ databaseUrl: processorDb.url });
  ledgerSql = postgres(processorDb.url, { max: 1, onnotice: () => {} });
  deps = {
    sql: app.client.sql,
    processorFor: createProcessorClients({ processorUrl: processor.url, timeoutMs: 5_000 }),
    leaseMs: 30_000,
    backoff: { baseMs: 10, maxMs: 20 },
    log: () => {},
  };
}, 60_000);

afterAll(async () => {
  await ledgerSql?.end();
  await processor?.stop();
  await processorDb?.drop();
  await app?.drop();
});

/** Claims and runs due jobs, as the dispatcher would, until none is left for `paymentId`. */
async function runJobsOf(paymentId: string): Promise<void> {
  for (let round = 0; round < 50; round++) {
    const claims = await claimDueJobs(app.client.sql, {
      workerId: 'w-test',
      leaseMs: 30_000,
      limit: 10,
      kinds: handledJobKinds,
    });
    for (const { job } of claims) await runJob(job, deps);
    const [left] = await app.client.sql<{ n: number }[]>`
      select count(*)::int as n from outbox_jobs
      where payment_id = ${paymentId} and status in ('pending', 'running')`;
    if (left!.n === 0) return;
    await sleep(25);
  }
  throw new Error(`jobs of ${paymentId} did not finish`);
}

async function authorizedCheckout(amount = 2000): Promise<SeededCheckout> {
  const checkout = await seedCheckout(app.client.sql, { amount, captureMethod: 'manual' });
  await runJobsOf(checkout.paymentId);
  return checkout;
}

const paymentRow = async (paymentId: string) =>
  (
    await app.client.sql<{ status: string; amount_captured: number | null }[]>`
      select status, amount_captured from payments where id = ${paymentId}`
  )[0]!;

const actionRow = async (actionId: string) =>
  (
    await app.client.sql<{ status: string; failure_code: string | null }[]>`
      select status, failure_code from payment_actions where id = ${actionId}`
  )[0]!;

/** The processor's ledger rows for one payment (by the metadata the worker sends). */
const ledgerOf = (paymentId: string) =>
  ledgerSql<{ kind: string; amount: number; idempotency_key: string | null }[]>`
    select kind, amount::int as amount, idempotency_key from ledger_entries
    where metadata->>'payment_id' = ${paymentId} order by seq`;

async function expectInvariantHolds(): Promise<void> {
  const report = await verifyInvariant({
    databaseUrl: app.url,
    processorDatabaseUrl: processorDb.url,
    converged: true,
  });
  expect(report.violations).toEqual([]);
}

describe('authorise, then capture or void, each once', () => {
  it('a manual-capture checkout is authorised: nothing charged until an operator captures', async () => {
    const checkout = await authorizedCheckout();
    expect(await paymentRow(checkout.paymentId)).toEqual({
      status: 'authorized',
      amount_captured: null,
    });
    expect(await ledgerOf(checkout.paymentId)).toEqual([]);
    await expectInvariantHolds();
  });

  it('a partial capture captures that amount once, under the action’s own key', async () => {
    const checkout = await authorizedCheckout(2000);
    const action = await seedAuthorizationAction(app.client.sql, checkout, 'capture', {
      amount: 1500,
    });
    await runJobsOf(checkout.paymentId);
    expect(await paymentRow(checkout.paymentId)).toEqual({
      status: 'captured',
      amount_captured: 1500,
    });
    expect(await actionRow(action.actionId)).toEqual({ status: 'succeeded', failure_code: null });
    expect(await ledgerOf(checkout.paymentId)).toEqual([
      { kind: 'charge', amount: 1500, idempotency_key: action.downstreamKey },
    ]);
    await expectInvariantHolds();
  });

  it('a capture whose answer is lost is retried with the same key: one capture at the processor', async () => {
    const checkout = await authorizedCheckout();
    await adminClient(processor.url).armFault({
      account: 'acct_tenant_a',
      kind: 'fail_after_charge',
      operation: 'payment_intents.capture',
    });
    const action = await seedAuthorizationAction(app.client.sql, checkout, 'capture');
    await runJobsOf(checkout.paymentId);
    expect(await paymentRow(checkout.paymentId)).toEqual({
      status: 'captured',
      amount_captured: 2000,
    });
    expect(await actionRow(action.actionId)).toMatchObject({ status: 'succeeded' });
    const [job] = await app.client.sql`
      select attempts from outbox_jobs where id = ${action.jobId}`;
    expect(job!.attempts).toBeGreaterThan(1);
    expect(await ledgerOf(checkout.paymentId)).toHaveLength(1);
    await expectInvariantHolds();
  });

  it('a worker that died after the capture, before recording it: the next claim reads the intent and records it', async () => {
    const checkout = await authorizedCheckout();
    const action = await seedAuthorizationAction(app.client.sql, checkout, 'capture');
    // The dying worker: claims the job, the processor captures under its key, nothing is recorded.
    const [claim] = await claimDueJobs(app.client.sql, {
      workerId: 'w-dies',
      leaseMs: 30_000,
      limit: 1,
      kinds: ['capture_payment'],
    });
    expect(claim?.job.id).toBe(action.jobId);
    const [payment] = await app.client.sql<{ intent: string }[]>`
      select processor_payment_intent_id as intent from payments where id = ${checkout.paymentId}`;
    await deps
      .processorFor('sk_test_tenant_a')
      .paymentIntents.capture(payment!.intent, {}, { idempotencyKey: action.downstreamKey });
    // Its lease runs out; another worker takes the job over.
    await app.client.sql`
      update outbox_jobs set locked_until = now() - interval '1 second' where id = ${action.jobId}`;
    await runJobsOf(checkout.paymentId);
    expect(await paymentRow(checkout.paymentId)).toEqual({
      status: 'captured',
      amount_captured: 2000,
    });
    expect(await actionRow(action.actionId)).toMatchObject({ status: 'succeeded' });
    expect(await ledgerOf(checkout.paymentId)).toHaveLength(1);
    await expectInvariantHolds();
  });

  it('a void releases the authorisation: nothing is ever charged', async () => {
    const checkout = await authorizedCheckout();
    const action = await seedAuthorizationAction(app.client.sql, checkout, 'void');
    await runJobsOf(checkout.paymentId);
    expect(await paymentRow(checkout.paymentId)).toEqual({
      status: 'voided',
      amount_captured: null,
    });
    expect(await actionRow(action.actionId)).toEqual({ status: 'succeeded', failure_code: null });
    expect(await ledgerOf(checkout.paymentId)).toEqual([]);
    await expectInvariantHolds();
  });

  it('a capture of an authorisation the processor already canceled fails, and the payment is voided', async () => {
    const checkout = await authorizedCheckout();
    const [payment] = await app.client.sql<{ intent: string }[]>`
      select processor_payment_intent_id as intent from payments where id = ${checkout.paymentId}`;
    await deps.processorFor('sk_test_tenant_a').paymentIntents.cancel(payment!.intent);
    const action = await seedAuthorizationAction(app.client.sql, checkout, 'capture');
    await runJobsOf(checkout.paymentId);
    expect(await actionRow(action.actionId)).toEqual({
      status: 'failed',
      failure_code: 'payment_already_voided',
    });
    expect((await paymentRow(checkout.paymentId)).status).toBe('voided');
    expect(await ledgerOf(checkout.paymentId)).toEqual([]);
    await expectInvariantHolds();
  });

  it('a capture the processor refuses (over the capturable amount) is recorded failed; the payment stays authorised', async () => {
    const checkout = await authorizedCheckout(2000);
    const action = await seedAuthorizationAction(app.client.sql, checkout, 'capture', {
      amount: 2500,
    });
    await runJobsOf(checkout.paymentId);
    expect(await actionRow(action.actionId)).toEqual({
      status: 'failed',
      failure_code: 'amount_too_large',
    });
    expect((await paymentRow(checkout.paymentId)).status).toBe('authorized');
    expect(await ledgerOf(checkout.paymentId)).toEqual([]);
  });
});
