import { confirmKeyFor } from '@once/payments';
import { adminClient } from '@once/processor/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessSystem, startInProcessSystem } from '../test-support/in-process-system.ts';
import { type SeededCheckout, seedCheckout } from '../test-support/seed-checkouts.ts';
import { reconcilePayments } from './reconcile-payments.ts';
import type { ReconcileOptions } from './reconciler-decision.ts';

// 3-D Secure below the page: the worker's handlers and the reconciler, run in this process,
// against the real processor (its hosted challenge answered as a browser would) and a real
// database. No webhook reaches this database: only the reconciler's questions settle.
let system: InProcessSystem;
const RETURN_URL = 'https://shop.example/checkout/return';

beforeAll(async () => {
  system = await startInProcessSystem('worker_three_d_secure');
  system.deps.returnUrl = RETURN_URL;
}, 60_000);

afterAll(async () => {
  await system?.close();
});

interface PaymentRow {
  status: string;
  next_action_url: string | null;
  processor_payment_intent_id: string | null;
  failure_code: string | null;
}

const paymentRow = async (paymentId: string) =>
  (
    await system.app.client.sql<PaymentRow[]>`
      select status, next_action_url, processor_payment_intent_id, failure_code
      from payments where id = ${paymentId}`
  )[0]!;

const jobsOf = (paymentId: string) =>
  system.app.client.sql<{ status: string; attempts: number }[]>`
    select status, attempts from outbox_jobs where payment_id = ${paymentId}`;

const reconcile = (options: Partial<ReconcileOptions> = {}) =>
  reconcilePayments({
    sql: system.app.client.sql,
    processorFor: system.deps.processorFor,
    log: () => {},
    olderThanMs: 0,
    maxRequeues: 3,
    recheckBackoff: { baseMs: 1, maxMs: 1 },
    challengeRecheckBackoff: { baseMs: 1, maxMs: 1 },
    ...options,
  });

/** A checkout with a card that needs 3-D Secure, charged by the worker up to the challenge. */
async function challengedCheckout(
  paymentMethod = 'pm_card_threeDSecure2Required',
): Promise<SeededCheckout & { challengeUrl: string }> {
  const checkout = await seedCheckout(system.app.client.sql, { amount: 2500, paymentMethod });
  await system.runJobsOf(checkout.paymentId);
  const row = await paymentRow(checkout.paymentId);
  expect(row.status).toBe('requires_action');
  return { ...checkout, challengeUrl: row.next_action_url! };
}

/** What the shopper's browser does on the bank's page: press one button, get sent back. */
async function answerChallenge(challengeUrl: string, answer: 'complete' | 'fail') {
  const url = new URL(challengeUrl);
  const response = await fetch(new URL(url.pathname, url), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_secret: url.searchParams.get('client_secret')!, answer }),
    redirect: 'manual',
  });
  expect(response.status).toBe(303);
  return new URL(response.headers.get('location')!);
}

describe('3-D Secure: the worker records the challenge, the processor settles it', () => {
  it.each(['pm_card_threeDSecure2Required', 'pm_card_authenticationRequired'])(
    '%s: recorded requires_action with the challenge URL; the job ends; a completed challenge ends succeeded, charged once',
    async (paymentMethod) => {
      const checkout = await challengedCheckout(paymentMethod);
      const waiting = await paymentRow(checkout.paymentId);
      expect(waiting.processor_payment_intent_id).toMatch(/^pi_/);
      expect(checkout.challengeUrl).toContain(
        `/three_d_secure/${waiting.processor_payment_intent_id}`,
      );
      // The job does not loop on the shopper's turn: done after one attempt, nothing charged.
      expect(await jobsOf(checkout.paymentId)).toEqual([{ status: 'done', attempts: 1 }]);
      expect(await system.ledgerOf(checkout.paymentId)).toEqual([]);
      // Not answered yet: the reconciler leaves it waiting.
      await reconcile();
      expect((await paymentRow(checkout.paymentId)).status).toBe('requires_action');

      const back = await answerChallenge(checkout.challengeUrl, 'complete');
      expect(`${back.origin}${back.pathname}`).toBe(RETURN_URL);
      expect(back.searchParams.get('payment_intent')).toBe(waiting.processor_payment_intent_id);

      await reconcile();
      expect(await paymentRow(checkout.paymentId)).toEqual({
        status: 'succeeded',
        next_action_url: null,
        processor_payment_intent_id: waiting.processor_payment_intent_id,
        failure_code: null,
      });
      // Booked once, under the confirm's key: the one the worker sent before the challenge.
      expect(await system.ledgerOf(checkout.paymentId)).toEqual([
        { kind: 'charge', amount: 2500, idempotency_key: confirmKeyFor(checkout.downstreamKey) },
      ]);
      await system.expectInvariantHolds();
    },
  );

  it('the answer to the confirm that asked for the challenge is lost: the retry reads the intent, records the same challenge, and the payment is charged once', async () => {
    await adminClient(system.processor.url).armFault({
      account: 'acct_tenant_a',
      kind: 'fail_after_charge',
      operation: 'payment_intents.confirm',
    });
    const checkout = await challengedCheckout();
    // Two attempts: the first lost its answer (a 5xx after the processor asked for the
    // challenge), the second retrieved the intent instead of confirming it again.
    expect(await jobsOf(checkout.paymentId)).toEqual([{ status: 'done', attempts: 2 }]);
    expect(checkout.challengeUrl).toContain('/three_d_secure/');

    await answerChallenge(checkout.challengeUrl, 'complete');
    await reconcile();
    expect((await paymentRow(checkout.paymentId)).status).toBe('succeeded');
    expect(await system.ledgerOf(checkout.paymentId)).toEqual([
      { kind: 'charge', amount: 2500, idempotency_key: confirmKeyFor(checkout.downstreamKey) },
    ]);
    await system.expectInvariantHolds();
  });

  it('a failed challenge ends failed with the authentication error; nothing is charged or re-confirmed', async () => {
    const checkout = await challengedCheckout();
    const back = await answerChallenge(checkout.challengeUrl, 'fail');
    expect(back.searchParams.get('redirect_status')).toBe('failed');

    await reconcile();
    expect(await paymentRow(checkout.paymentId)).toMatchObject({
      status: 'failed',
      next_action_url: null,
      failure_code: 'payment_intent_authentication_failure',
    });
    expect(await jobsOf(checkout.paymentId)).toHaveLength(1);
    expect(await system.ledgerOf(checkout.paymentId)).toEqual([]);
    await system.expectInvariantHolds();
  });

  it('an abandoned challenge is canceled at the processor once its window passes; the payment ends canceled and a late answer charges nothing', async () => {
    const checkout = await challengedCheckout();
    // Within the window: left waiting for the shopper.
    await reconcile({ challengeAbandonAfterMs: 60_000 });
    expect((await paymentRow(checkout.paymentId)).status).toBe('requires_action');

    const summary = await reconcile({ challengeAbandonAfterMs: 1 });
    expect(summary.challengesCanceled).toBe(1);
    expect(await paymentRow(checkout.paymentId)).toMatchObject({
      status: 'canceled',
      next_action_url: null,
      failure_code: 'authentication_abandoned',
    });
    const intent = await system.deps
      .processorFor('sk_test_tenant_a')
      .paymentIntents.retrieve((await paymentRow(checkout.paymentId)).processor_payment_intent_id!);
    expect(intent.status).toBe('canceled');

    // The shopper comes back to the bank's page too late: nothing is charged.
    const back = await answerChallenge(checkout.challengeUrl, 'complete');
    expect(back.searchParams.get('redirect_status')).toBe('failed');
    await reconcile({ challengeAbandonAfterMs: 1 });
    expect((await paymentRow(checkout.paymentId)).status).toBe('canceled');
    expect(await system.ledgerOf(checkout.paymentId)).toEqual([]);
    await system.expectInvariantHolds();
  });
});
