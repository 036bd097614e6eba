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
  seedRefund,
} from '../../test-support/seed-checkouts.ts';

// Refunds end to end below the API: the worker's handlers in this process, the real processor
// (in process) and a real database, one of each for the file.
let system: InProcessSystem;

beforeAll(async () => {
  // Asynchronous test-card refunds settle after 300 ms instead of Stripe's "some time later".
  system = await startInProcessSystem('worker_refunds', { refundSettleMs: 300 });
}, 60_000);

afterAll(async () => {
  await system?.close();
});

const sql = () => system.app.client.sql;

async function paidCheckout(amount = 2000, paymentMethod?: string): Promise<SeededCheckout> {
  const checkout = await seedCheckout(sql(), { amount, paymentMethod });
  await system.runJobsOf(checkout.paymentId);
  return checkout;
}

const refundRow = async (refundId: string) =>
  (
    await sql()<{ status: string; failure_code: string | null }[]>`
      select status, failure_code from refunds where id = ${refundId}`
  )[0]!;

describe('refunds, each once', () => {
  it('two partial refunds of one payment: each refunded once, under its own key', async () => {
    const checkout = await paidCheckout(2000);
    const first = await seedRefund(sql(), checkout, 500);
    await system.runJobsOf(checkout.paymentId);
    const second = await seedRefund(sql(), checkout, 700);
    await system.runJobsOf(checkout.paymentId);
    expect(await refundRow(first.refundId)).toEqual({ status: 'succeeded', failure_code: null });
    expect(await refundRow(second.refundId)).toEqual({ status: 'succeeded', failure_code: null });
    expect(await system.ledgerOf(checkout.paymentId)).toEqual([
      { kind: 'charge', amount: 2000, idempotency_key: expect.any(String) },
      { kind: 'refund', amount: 500, idempotency_key: first.downstreamKey },
      { kind: 'refund', amount: 700, idempotency_key: second.downstreamKey },
    ]);
    await system.expectInvariantHolds();
  });

  it('a refund whose answer is lost is retried with the same key: refunded once', async () => {
    const checkout = await paidCheckout();
    await adminClient(system.processor.url).armFault({
      account: 'acct_tenant_a',
      kind: 'fail_after_charge',
      operation: 'refunds.create',
    });
    const refund = await seedRefund(sql(), checkout, 2000);
    await system.runJobsOf(checkout.paymentId);
    expect(await refundRow(refund.refundId)).toMatchObject({ status: 'succeeded' });
    const [job] = await sql()`select attempts from outbox_jobs where id = ${refund.jobId}`;
    expect(job!.attempts).toBeGreaterThan(1);
    const refunds = (await system.ledgerOf(checkout.paymentId)).filter((l) => l.kind === 'refund');
    expect(refunds).toEqual([
      { kind: 'refund', amount: 2000, idempotency_key: refund.downstreamKey },
    ]);
    await system.expectInvariantHolds();
  });

  it('a worker gone after the refund, before recording it: the next claim finds it and records it', async () => {
    const checkout = await paidCheckout();
    const refund = await seedRefund(sql(), checkout, 800);
    const [claim] = await claimDueJobs(sql(), {
      workerId: 'w-dies',
      leaseMs: 30_000,
      limit: 1,
      kinds: ['refund_payment'],
    });
    expect(claim?.job.id).toBe(refund.jobId);
    const [payment] = await sql()<{ intent: string }[]>`
      select processor_payment_intent_id as intent from payments where id = ${checkout.paymentId}`;
    // What the dying worker sent, as the handler sends it.
    await system.deps.processorFor('sk_test_tenant_a').refunds.create(
      {
        payment_intent: payment!.intent,
        amount: 800,
        metadata: {
          refund_id: refund.refundId,
          payment_id: checkout.paymentId,
          tenant_id: checkout.tenantId,
        },
      },
      { idempotencyKey: refund.downstreamKey },
    );
    await sql()`
      update outbox_jobs set locked_until = now() - interval '1 second' where id = ${refund.jobId}`;
    await system.runJobsOf(checkout.paymentId);
    expect(await refundRow(refund.refundId)).toMatchObject({ status: 'succeeded' });
    const refunds = (await system.ledgerOf(checkout.paymentId)).filter((l) => l.kind === 'refund');
    expect(refunds).toHaveLength(1);
    await system.expectInvariantHolds();
  });

  it('a refund left unknown (its only attempt lost the answer) is requeued, found, and recorded: refunded once', async () => {
    const checkout = await paidCheckout();
    await adminClient(system.processor.url).armFault({
      account: 'acct_tenant_a',
      kind: 'fail_after_charge',
      operation: 'refunds.create',
    });
    const refund = await seedRefund(sql(), checkout, 900, { maxAttempts: 1 });
    await system.runJobsOf(checkout.paymentId);
    expect(await refundRow(refund.refundId)).toMatchObject({ status: 'unknown' });
    expect(await requeueUnansweredMoneyMoves(sql(), { olderThanMs: 0 })).toBe(1);
    await system.runJobsOf(checkout.paymentId);
    expect(await refundRow(refund.refundId)).toEqual({ status: 'succeeded', failure_code: null });
    const refunds = (await system.ledgerOf(checkout.paymentId)).filter((l) => l.kind === 'refund');
    expect(refunds).toHaveLength(1);
    // The requeued job looked before it sent anything: no second create.
    const creates = await sql()`
      select 1 from payment_events
      where payment_id = ${checkout.paymentId} and kind = 'processor.call'
        and detail->>'call' = 'refund'`;
    expect(creates).toHaveLength(1);
    expect(await requeueUnansweredMoneyMoves(sql(), { olderThanMs: 0 })).toBe(0);
    await system.expectInvariantHolds();
  });

  it('a refund the processor refuses is recorded failed with its code; nothing moves', async () => {
    const checkout = await paidCheckout(2000);
    // Written past the API's own check, as a stale or buggy writer could: the processor's
    // refusal is the last guard, and it is recorded.
    const refund = await seedRefund(sql(), checkout, 2001);
    await system.runJobsOf(checkout.paymentId);
    expect(await refundRow(refund.refundId)).toEqual({
      status: 'failed',
      failure_code: 'amount_too_large',
    });
    expect((await system.ledgerOf(checkout.paymentId)).map((l) => l.kind)).toEqual(['charge']);
    await system.expectInvariantHolds();
  });

  it('a refund the processor answers pending is followed until it succeeds', async () => {
    const checkout = await paidCheckout(2000, 'pm_card_pendingRefund');
    const refund = await seedRefund(sql(), checkout, 2000);
    await system.runJobsOf(checkout.paymentId);
    expect(await refundRow(refund.refundId)).toEqual({ status: 'succeeded', failure_code: null });
    const [job] = await sql()`select last_error from outbox_jobs where id = ${refund.jobId}`;
    expect(job!.last_error).toBeNull();
    const calls = await sql()<{ call: string }[]>`
      select detail->>'call' as call from payment_events
      where payment_id = ${checkout.paymentId} and kind = 'processor.call'
        and detail->>'job' = ${refund.jobId}`;
    // Created once, then read by id until final.
    expect(calls.map((c) => c.call)).toContain('retrieve_refund');
    expect(calls.filter((c) => c.call === 'refund')).toHaveLength(1);
    await system.expectInvariantHolds();
  });

  it('a partially captured payment refunds what was captured', async () => {
    const checkout = await seedCheckout(sql(), { amount: 2000, captureMethod: 'manual' });
    await system.runJobsOf(checkout.paymentId);
    await seedAuthorizationAction(sql(), checkout, 'capture', { amount: 1500 });
    await system.runJobsOf(checkout.paymentId);
    const refund = await seedRefund(sql(), checkout, 1500);
    await system.runJobsOf(checkout.paymentId);
    expect(await refundRow(refund.refundId)).toMatchObject({ status: 'succeeded' });
    expect((await system.ledgerOf(checkout.paymentId)).map((l) => [l.kind, l.amount])).toEqual([
      ['charge', 1500],
      ['refund', 1500],
    ]);
    await system.expectInvariantHolds();
  });
});
