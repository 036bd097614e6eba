import {
  importProcessorRefunds,
  type ListedProcessorRefund,
  type PaymentRef,
  settlePayment,
} from '@once/payments';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import type { ChargeOutcome } from './charge-outcome.ts';
import { observedCall, type ProcessorCall } from './processor-call-log.ts';

/**
 * What an intent taken over from an earlier payment of the same checkout went through after
 * its charge, at the processor: that payment's row was lost (a failover dropped acknowledged
 * commits) with its capture and refunds, which the processor still holds.
 */
export interface AdoptedIntentHistory {
  intentId: string;
  /** A manual-capture intent's captured amount (`amount_received`), once captured; else null. */
  capturedAmount: number | null;
  refunds: ListedProcessorRefund[];
}

/**
 * Whether the intent was made for another payment than this one (its `payment_id` metadata):
 * an earlier payment of the same checkout, whose downstream key this payment shares.
 *
 * @example
 * if (isEarlierPaymentsIntent(intent, job.paymentId)) history = await readAdoptedIntentHistory(...);
 */
export function isEarlierPaymentsIntent(
  intent: { metadata?: Record<string, string> | null },
  paymentId: string,
): boolean {
  const madeFor = intent.metadata?.payment_id;
  return madeFor !== undefined && madeFor !== paymentId;
}

/**
 * The intent as it is now (a replayed create or confirm answers as it was then) and every
 * refund on it, read after its charge settled.
 *
 * @example
 * const history = await readAdoptedIntentHistory(processor, 'pi_1', calls);
 */
export async function readAdoptedIntentHistory(
  processor: Stripe,
  intentId: string,
  calls: ProcessorCall[],
): Promise<AdoptedIntentHistory> {
  const intent = await observedCall(calls, { call: 'retrieve', intent: intentId }, () =>
    processor.paymentIntents.retrieve(intentId),
  );
  const refunds = await observedCall(calls, { call: 'list_refunds', intent: intentId }, () =>
    processor.refunds.list({ payment_intent: intentId, limit: 100 }),
  );
  return {
    intentId,
    capturedAmount:
      intent.capture_method === 'manual' && intent.status === 'succeeded'
        ? intent.amount_received
        : null,
    refunds: refunds.data.map((refund) => ({
      id: refund.id,
      status: refund.status,
      amount: refund.amount,
      reason: refund.reason,
      failure_reason: refund.failure_reason ?? null,
      metadata: refund.metadata,
    })),
  };
}

/**
 * The charge's outcome for the payment that took the intent over: a captured manual-capture
 * intent was first authorised (the payment is settled `authorized`, then `captured` with what
 * was captured, by {@link recordAdoptedIntentHistory}), never a plain `succeeded` for its
 * whole amount.
 *
 * @example
 * outcome = outcomeOfAdoptedIntent(outcome, history);
 */
export function outcomeOfAdoptedIntent(
  outcome: ChargeOutcome,
  history: AdoptedIntentHistory,
): ChargeOutcome {
  return history.capturedAmount !== null && outcome.kind === 'succeeded'
    ? { kind: 'authorized', paymentIntentId: outcome.paymentIntentId }
    : outcome;
}

/**
 * Records the taken-over intent's history on the payment, in the transaction that settles its
 * charge: its capture, then the refunds it does not hold. Returns what it recorded, for the
 * payment's timeline.
 *
 * @example
 * const adopted = await recordAdoptedIntentHistory(tx, { tenantId, paymentId }, history);
 */
export async function recordAdoptedIntentHistory(
  tx: postgres.TransactionSql,
  payment: PaymentRef,
  history: AdoptedIntentHistory,
): Promise<Record<string, unknown>> {
  const captured =
    history.capturedAmount !== null &&
    (await settlePayment(tx, payment, {
      status: 'captured',
      amountCaptured: history.capturedAmount,
    }));
  const refunds = await importProcessorRefunds(tx, payment, history.refunds);
  return {
    intent: history.intentId,
    ...(captured ? { captured: history.capturedAmount } : {}),
    refundsImported: refunds,
  };
}
