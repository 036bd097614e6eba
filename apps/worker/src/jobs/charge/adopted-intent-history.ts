import {
  importProcessorRefunds,
  type ListedProcessorRefund,
  type PaymentRef,
  settlePayment,
} from '@once/payments';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import type { ChargeOutcome } from '../../processor/charge-outcome.ts';
import { observedCall, type ProcessorCall } from '../../processor/processor-call-log.ts';

/**
 * What an intent taken over from an earlier payment of the same checkout went through after
 * its charge, at the processor: that payment's row was lost (a failover dropped acknowledged
 * commits) with its capture, void and refunds, which the processor still holds.
 */
export interface AdoptedIntentHistory {
  intentId: string;
  /** A manual-capture intent's captured amount (`amount_received`), once captured; else null. */
  capturedAmount: number | null;
  /** Authorised, then canceled (an operator's void, or the authorisation's expiry). */
  voided: boolean;
  refunds: ListedProcessorRefund[];
}

/**
 * Whether a charge that ended `found` on `intent` may have gone on at the processor under an
 * earlier payment (a capture, a void, refunds), so its history is worth reading: the intent was
 * made for another payment (its `payment_id` metadata), an earlier one of the same checkout
 * whose downstream key this payment shares, and it charged, was authorised, or was canceled
 * (perhaps authorised, then voided).
 */
export function mayHaveAdoptedHistory(
  intent: { metadata?: Record<string, string> | null },
  found: string,
  paymentId: string,
): boolean {
  const madeFor = intent.metadata?.payment_id;
  return (
    madeFor !== undefined &&
    madeFor !== paymentId &&
    ['succeeded', 'authorized', 'canceled'].includes(found)
  );
}

/**
 * The intent as it is now (a replayed create or confirm answers as it was then) and every
 * refund on it, read after its charge settled.
 */
export async function readAdoptedIntentHistory(
  processor: Stripe,
  intentId: string,
  calls: ProcessorCall[],
): Promise<AdoptedIntentHistory> {
  const intent = await observedCall(calls, { call: 'retrieve', intent: intentId }, () =>
    processor.paymentIntents.retrieve(intentId),
  );
  const voided = wasVoidedAfterAuthorisation(intent);
  // A released authorisation gave nothing back: nothing was captured, so nothing to import.
  const refunds = voided
    ? { data: [] }
    : await observedCall(calls, { call: 'list_refunds', intent: intentId }, () =>
        processor.refunds.list({ payment_intent: intentId, limit: 100 }),
      );
  return {
    intentId,
    capturedAmount:
      intent.capture_method === 'manual' && intent.status === 'succeeded'
        ? intent.amount_received
        : null,
    voided,
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
 * Whether a canceled intent had been authorised first: the processor releases a
 * manual-capture authorisation when it cancels it (Stripe refunds the `amount_capturable`),
 * and the intent keeps the charge it made (`latest_charge`). A charge that failed leaves its
 * `last_payment_error` on the intent (a decline, a failed challenge), and the worker confirms
 * an intent once, with one payment method: a canceled intent with a charge and no error was
 * authorised. An intent canceled before any charge (a challenge abandoned, a confirm never
 * sent) has no `latest_charge`.
 */
function wasVoidedAfterAuthorisation(intent: Stripe.PaymentIntent): boolean {
  return (
    intent.capture_method === 'manual' &&
    intent.status === 'canceled' &&
    intent.latest_charge != null &&
    !intent.last_payment_error
  );
}

/**
 * The charge's outcome for the payment that took the intent over: a captured or voided
 * manual-capture intent was first authorised (the payment is settled `authorized`, then
 * `captured` with what was captured or `voided`, by {@link recordAdoptedIntentHistory}), never
 * a plain `succeeded` for its whole amount, nor `canceled` before any charge.
 */
export function outcomeOfAdoptedIntent<T extends ChargeOutcome>(
  outcome: T,
  history: AdoptedIntentHistory,
): T | { kind: 'authorized'; paymentIntentId: string } {
  if (
    (outcome.kind === 'succeeded' && history.capturedAmount !== null) ||
    (outcome.kind === 'canceled' && history.voided)
  ) {
    return { kind: 'authorized', paymentIntentId: outcome.paymentIntentId };
  }
  return outcome;
}

/**
 * Records the taken-over intent's history on the payment, in the transaction that settles its
 * charge (`authorized`, for an intent captured or voided): its capture or void, as an
 * operator's would settle it, then the refunds it does not hold. Returns what it recorded,
 * for the payment's timeline.
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
  const voided = history.voided && (await settlePayment(tx, payment, { status: 'voided' }));
  const refunds = await importProcessorRefunds(tx, payment, history.refunds);
  return {
    intent: history.intentId,
    ...(captured ? { captured: history.capturedAmount } : {}),
    ...(voided ? { voided: true } : {}),
    refundsImported: refunds,
  };
}
