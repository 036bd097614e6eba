import { claimDueJobs } from '@once/db/outbox';
import { adminClient } from '@once/processor/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requeueUnansweredMoneyMoves } from '../../reconcile/requeue-unanswered.ts';
import {
  type InProcessSystem,
  startInProcessSystem,
} from '../../test-support/in-process-system.ts';
import {
  type SeededCheckout,
  seedAuthorizationAction,
  seedCheckout,
} from '../../test-support/seed-checkouts.ts';

// Manual capture end to end below the API: the worker's handlers, run in this process, against
// the real processor (in process too) and a real database; one of each for the whole file.
let system: InProcessSystem;

beforeAll(async () => {
  system = await startInProcessSystem('worker_authorization_actions');
}, 60_000);

afterAll(async () => {
  await system?.close();
});

const runJobsOf = (paymentId: string) => system.runJobsOf(paymentId);
const ledgerOf = (paymentId: string) => system.ledgerOf(paymentId);
const expectInvariantHolds = () => system.expectInvariantHolds();

async function authorizedCheckout(amount = 2000): Promise<SeededCheckout> {
  const checkout = await seedCheckout(system.app.client.sql, { amount, captureMethod: 'manual' });
  await runJobsOf(checkout.paymentId);
  return checkout;
}

const paymentRow = async (paymentId: string) =>
  (
    await system.app.client.sql<{ status: string; amount_captured: number | null }[]>`
      select status, amount_captured from payments where id = ${paymentId}`
  )[0]!;

const actionRow = async (actionId: string) =>
  (
    await system.app.client.sql<{ status: string; failure_code: string | null }[]>`
      select status, failure_code from payment_actions where id = ${actionId}`
  )[0]!;

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
    const action = await seedAuthorizationAction(system.app.client.sql, checkout, 'capture', {
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
    await adminClient(system.processor.url).armFault({
      account: 'acct_tenant_a',
      kind: 'fail_after_charge',
      operation: 'payment_intents.capture',
    });
    const action = await seedAuthorizationAction(system.app.client.sql, checkout, 'capture');
    await runJobsOf(checkout.paymentId);
    expect(await paymentRow(checkout.paymentId)).toEqual({
      status: 'captured',
      amount_captured: 2000,
    });
    expect(await actionRow(action.actionId)).toMatchObject({ status: 'succeeded' });
    const [job] = await system.app.client.sql`
      select attempts from outbox_jobs where id = ${action.jobId}`;
    expect(job!.attempts).toBeGreaterThan(1);
    expect(await ledgerOf(checkout.paymentId)).toHaveLength(1);
    await expectInvariantHolds();
  });

  it('a worker that died after the capture, before recording it: the next claim reads the intent and records it', async () => {
    const checkout = await authorizedCheckout();
    const action = await seedAuthorizationAction(system.app.client.sql, checkout, 'capture');
    // The dying worker: claims the job, the processor captures under its key, nothing is recorded.
    const [claim] = await claimDueJobs(system.app.client.sql, {
      workerId: 'w-dies',
      leaseMs: 30_000,
      limit: 1,
      kinds: ['capture_payment'],
    });
    expect(claim?.job.id).toBe(action.jobId);
    const [payment] = await system.app.client.sql<{ intent: string }[]>`
      select processor_payment_intent_id as intent from payments where id = ${checkout.paymentId}`;
    await system.deps
      .processorFor('sk_test_tenant_a')
      .paymentIntents.capture(payment!.intent, {}, { idempotencyKey: action.downstreamKey });
    // Its lease runs out; another worker takes the job over.
    await system.app.client.sql`
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

  it('a capture left unknown (its only attempt lost the answer) is requeued and recorded from the intent: captured once', async () => {
    const checkout = await authorizedCheckout();
    await adminClient(system.processor.url).armFault({
      account: 'acct_tenant_a',
      kind: 'fail_after_charge',
      operation: 'payment_intents.capture',
    });
    const action = await seedAuthorizationAction(system.app.client.sql, checkout, 'capture', {
      maxAttempts: 1,
    });
    await runJobsOf(checkout.paymentId);
    expect(await actionRow(action.actionId)).toMatchObject({ status: 'unknown' });
    expect((await paymentRow(checkout.paymentId)).status).toBe('authorized');
    expect(await requeueUnansweredMoneyMoves(system.app.client.sql, { olderThanMs: 0 })).toBe(1);
    await runJobsOf(checkout.paymentId);
    expect(await actionRow(action.actionId)).toEqual({ status: 'succeeded', failure_code: null });
    expect(await paymentRow(checkout.paymentId)).toEqual({
      status: 'captured',
      amount_captured: 2000,
    });
    expect(await ledgerOf(checkout.paymentId)).toHaveLength(1);
    await expectInvariantHolds();
  });

  it('a void releases the authorisation: nothing is ever charged', async () => {
    const checkout = await authorizedCheckout();
    const action = await seedAuthorizationAction(system.app.client.sql, checkout, 'void');
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
    const [payment] = await system.app.client.sql<{ intent: string }[]>`
      select processor_payment_intent_id as intent from payments where id = ${checkout.paymentId}`;
    await system.deps.processorFor('sk_test_tenant_a').paymentIntents.cancel(payment!.intent);
    const action = await seedAuthorizationAction(system.app.client.sql, checkout, 'capture');
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
    const action = await seedAuthorizationAction(system.app.client.sql, checkout, 'capture', {
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
