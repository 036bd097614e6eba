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
 * The history of an intent made for an earlier payment of the checkout (its `payment_id`
 * metadata) that charged, was authorised or canceled, read as it is now (a replayed create
 * or confirm answers as it was then) with every refund on it; undefined for any other intent.
 */
export async function readAdoptedIntentHistory(
  processor: Stripe,
  found: { id: string; metadata?: Record<string, string> | null },
  foundKind: string,
  paymentId: string,
  calls: ProcessorCall[],
): Promise<AdoptedIntentHistory | undefined> {
  const madeFor = found.metadata?.payment_id;
  const adopted = madeFor !== undefined && madeFor !== paymentId;
  if (!adopted || !['succeeded', 'authorized', 'canceled'].includes(foundKind)) return undefined;
  const intentId = found.id;
  const intent = await observedCall(calls, { call: 'retrieve', intent: intentId }, () =>
    processor.paymentIntents.retrieve(intentId),
  );
  // A canceled manual-capture intent keeps the charge it made (`latest_charge`), a failed charge
  // leaves its `last_payment_error`, and the worker confirms an intent once: so with a charge and
  // no error it was authorised, then voided.
  const voided =
    intent.capture_method === 'manual' &&
    intent.status === 'canceled' &&
    intent.latest_charge != null &&
    !intent.last_payment_error;
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
 * A captured or voided manual-capture intent was first `authorized` (then captured or voided
 * by {@link recordAdoptedIntentHistory}), never a plain `succeeded` nor `canceled` uncharged.
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
 * In the transaction that settles the charge: the capture or void as an operator's would
 * settle it, then the refunds it does not hold. Returns what it recorded, for the timeline.
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
