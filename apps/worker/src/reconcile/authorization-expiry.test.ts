import { createIdempotency } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessSystem, startInProcessSystem } from '../test-support/in-process-system.ts';
import { seedCheckout } from '../test-support/seed-checkouts.ts';
import { backfillWebhookEvents } from '../webhooks/backfill-webhook-events.ts';
import { reconcilePayments } from './reconcile-payments.ts';

// An authorisation nobody captured: the processor cancels it when its window ends
// (`cancellation_reason: automatic`, as Stripe does after 7 days) and sends
// payment_intent.canceled. The window here is 1.5 s, so the processor's own sweep ends it;
// its webhook endpoint is a closed port, so the app hears of it only from what it asks.
let system: InProcessSystem;

beforeAll(async () => {
  system = await startInProcessSystem('worker_authorization_expiry', {
    authorizationWindowMs: 1_500,
  });
}, 60_000);

afterAll(async () => {
  await system?.close();
});

const sql = () => system.app.client.sql;

const paymentRow = async (paymentId: string) =>
  (
    await sql()<{ status: string; failure_code: string | null; intent: string }[]>`
      select status, failure_code, processor_payment_intent_id as intent
      from payments where id = ${paymentId}`
  )[0]!;

/** A manual-capture checkout, authorised by the worker, then left until the processor ends it. */
async function expiredAuthorization(): Promise<{ paymentId: string; intentId: string }> {
  const checkout = await seedCheckout(sql(), { captureMethod: 'manual' });
  await system.runJobsOf(checkout.paymentId);
  const authorised = await paymentRow(checkout.paymentId);
  expect(authorised.status).toBe('authorized');
  const stripe = system.deps.processorFor('sk_test_tenant_a');
  for (let i = 0; i < 200; i++) {
    const intent = await stripe.paymentIntents.retrieve(authorised.intent);
    if (intent.status === 'canceled') {
      expect(intent).toMatchObject({ cancellation_reason: 'automatic', amount_capturable: 0 });
      return { paymentId: checkout.paymentId, intentId: intent.id };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the processor never ended the authorisation');
}

describe('an expired authorisation ends in the app too', () => {
  it('its payment_intent.canceled (confirmed by retrieving the intent) settles the payment voided, authorization_expired', async () => {
    const { paymentId, intentId } = await expiredAuthorization();
    const summary = await backfillWebhookEvents({
      store: {
        db: system.app.client.db,
        idempotencyEngine: createIdempotency({ store: createDrizzleStore(system.app.client.db) }),
      },
      processorFor: system.deps.processorFor,
      log: () => {},
    });
    expect(summary.applied).toBeGreaterThanOrEqual(1);
    expect(await paymentRow(paymentId)).toEqual({
      status: 'voided',
      failure_code: 'authorization_expired',
      intent: intentId,
    });
  });

  it('the reconciler looks at authorised payments and settles one whose authorisation ended voided', async () => {
    const { paymentId } = await expiredAuthorization();
    const summary = await reconcilePayments({
      sql: sql(),
      processorFor: system.deps.processorFor,
      log: () => {},
      olderThanMs: 0,
      maxRequeues: 3,
    });
    expect(summary.authorizationsEnded).toBe(1);
    expect(await paymentRow(paymentId)).toMatchObject({
      status: 'voided',
      failure_code: 'authorization_expired',
    });
    // Settled once: a second pass finds nothing left to end.
    const again = await reconcilePayments({
      sql: sql(),
      processorFor: system.deps.processorFor,
      log: () => {},
      olderThanMs: 0,
      maxRequeues: 3,
    });
    expect(again.authorizationsEnded).toBe(0);
  });
});
