import { randomUUID } from 'node:crypto';
import { pay } from '@once/api/checkout';
import { seedDemoData } from '@once/db/seed';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { applyProcessorEvent, type ProcessorPaymentIntentEvent } from '@once/payments';
import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settledOutcomeOf } from '../../processor/charge-outcome.ts';
import { reconcilePayments } from '../../reconcile/reconcile-payments.ts';
import { claimJobs } from '../../runtime/claim-jobs.ts';
import { recordChargeOutcome } from '../../test-support/record-charge-outcome.ts';
import { outcomeOfAdoptedIntent } from './adopted-intent-history.ts';

// The three paths that settle a payment (the worker recording a charge's outcome, the
// webhook receiver applying a processor event, the reconciler acting on the ledger) must
// settle the same facts the same way: same decline code, same job ids, same amount rule.
let app: TestDatabase;

beforeAll(async () => {
  app = await createTestDatabase('settlement_paths');
  await seedDemoData(app.client.db);
}, 120_000);

afterAll(async () => {
  await app?.drop();
});

const backoff = { baseMs: 10, maxMs: 20 };

/** A checkout as `checkout.pay` makes it: a `processing` payment and its charge job. */
async function checkout(): Promise<{ paymentId: string; amount: number }> {
  const result = await pay({
    ctx: {
      db: app.client.db,
      tenantId: 'tenant_a',
      idempotency: { key: randomUUID(), complete: async () => {} },
    },
    input: { lines: [{ productId: 'book_sre', quantity: 1 }] },
  });
  return { paymentId: result.paymentId, amount: result.amount };
}

async function paymentRow(paymentId: string) {
  const [row] = await app.client.sql<{ status: string; failure_code: string | null }[]>`
    select status, failure_code from payments where id = ${paymentId}`;
  return row;
}

/** A processor that knows of no intent (search finds nothing) or of the given ones. */
function processorKnowing(intents: Partial<Stripe.PaymentIntent>[]): () => Stripe {
  return () =>
    ({
      paymentIntents: { search: async () => ({ data: intents }) },
    }) as unknown as Stripe;
}

/** Lets the reconciler look at every unsettled payment with no live job, at once. */
async function handOverToReconciler(paymentId: string): Promise<void> {
  await app.client.sql`
    update outbox_jobs set status = 'dead' where payment_id = ${paymentId}`;
  await app.client.sql`
    update payments set status = 'unknown', updated_at = now() - interval '1 hour'
    where id = ${paymentId}`;
}

describe('the worker, the webhook receiver and the reconciler settle alike', () => {
  it('a decline the processor gives no code for is recorded under one code by the worker and by a webhook', async () => {
    const error = { message: 'Your card was declined.' };
    const byWorker = await checkout();
    const [job] = await claimJobs(app.client.sql, { workerId: 'w1', leaseMs: 60_000, limit: 1 });
    expect(job?.paymentId).toBe(byWorker.paymentId);
    const outcome = settledOutcomeOf({
      id: 'pi_worker',
      status: 'requires_payment_method',
      last_payment_error: error,
    });
    if (!job || !outcome) throw new Error('no job claimed or no outcome');
    await recordChargeOutcome(app.client.sql, job, outcome, backoff);

    const byWebhook = await checkout();
    const event: ProcessorPaymentIntentEvent = {
      id: 'evt_decline',
      type: 'payment_intent.payment_failed',
      data: {
        object: {
          id: 'pi_webhook',
          amount: byWebhook.amount,
          currency: 'usd',
          metadata: { payment_id: byWebhook.paymentId, tenant_id: 'tenant_a' },
          last_payment_error: error,
        },
      },
    };
    await app.client.db.transaction((tx) => applyProcessorEvent(tx, 'tenant_a', event));

    const worker = await paymentRow(byWorker.paymentId);
    const webhook = await paymentRow(byWebhook.paymentId);
    expect(worker?.status).toBe('declined');
    expect(webhook?.status).toBe('declined');
    expect(webhook?.failure_code).toBe(worker?.failure_code);
  });

  it('a replayed confirm that authorised an intent taken over, voided since, settles the payment voided', async () => {
    const { paymentId } = await checkout();
    const claimed = await claimJobs(app.client.sql, { workerId: 'w1', leaseMs: 60_000, limit: 10 });
    const job = claimed.find((one) => one.paymentId === paymentId);
    if (!job) throw new Error('no job claimed');
    // The confirm's key replays `requires_capture`; the intent read afterwards is canceled.
    const history = { intentId: 'pi_voided', capturedAmount: null, voided: true, refunds: [] };
    const outcome = outcomeOfAdoptedIntent(
      { kind: 'authorized', paymentIntentId: 'pi_voided' },
      history,
    );
    await recordChargeOutcome(app.client.sql, job, outcome, backoff, [], history);
    expect(await paymentRow(paymentId)).toEqual({ status: 'voided', failure_code: null });
  });

  it('the job the reconciler enqueues again has an id of the same form as the one checkout.pay wrote', async () => {
    const { paymentId } = await checkout();
    await handOverToReconciler(paymentId);
    const summary = await reconcilePayments({
      sql: app.client.sql,
      processorFor: processorKnowing([]),
      log: () => {},
      olderThanMs: 1_000,
      maxRequeues: 3,
    });
    expect(summary.requeued).toBeGreaterThanOrEqual(1);
    const jobs = await app.client.sql<{ id: string }[]>`
      select id from outbox_jobs where payment_id = ${paymentId} order by created_at`;
    expect(jobs).toHaveLength(2);
    const form = (id: string) => id.replace(/[0-9a-f]/g, 'x');
    expect(form(jobs[1]?.id ?? '')).toBe(form(jobs[0]?.id ?? ''));
  });

  it('an intent found by search for another amount is not taken as this payment’s charge, as a webhook for it is not', async () => {
    const { paymentId, amount } = await checkout();
    const foreign = {
      id: `pi_other_amount_${paymentId}`,
      status: 'succeeded',
      amount: amount + 100,
      currency: 'usd',
      metadata: { payment_id: paymentId, tenant_id: 'tenant_a' },
      last_payment_error: null,
    } as Partial<Stripe.PaymentIntent>;

    // The webhook receiver refuses it ...
    const event = {
      id: 'evt_other_amount',
      type: 'payment_intent.succeeded',
      data: { object: foreign },
    } as unknown as ProcessorPaymentIntentEvent;
    const applied = await app.client.db.transaction((tx) =>
      applyProcessorEvent(tx, 'tenant_a', event),
    );
    expect(applied.kind).toBe('amount_mismatch');

    // ... and so does the reconciler: it does not settle the payment on it.
    await handOverToReconciler(paymentId);
    await reconcilePayments({
      sql: app.client.sql,
      processorFor: processorKnowing([foreign]),
      log: () => {},
      olderThanMs: 1_000,
      maxRequeues: 3,
    });
    const row = await paymentRow(paymentId);
    expect(row?.status).not.toBe('succeeded');
    const [intent] = await app.client.sql<{ processor_payment_intent_id: string | null }[]>`
      select processor_payment_intent_id from payments where id = ${paymentId}`;
    expect(intent?.processor_payment_intent_id).toBeNull();
  });
});
