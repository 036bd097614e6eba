import type { Database } from '@once/db';
import { payments } from '@once/db/schema';
import { and, eq } from 'drizzle-orm';
import { chargeMatchesPayment } from './charge-amount.ts';
import { declineCodeOf } from './decline-code.ts';
import { isTerminalPayment, type PaymentStatus } from './payment-states.ts';
import { type PaymentSettlement, settlePayment } from './settle-payment.ts';
import { isAuthenticationFailure } from './three-d-secure-failure.ts';

/** A transaction of the application database, as drizzle hands it to `db.transaction`. */
type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

/** The part of a processor (Stripe-shaped) PaymentIntent event the webhook receiver reads. */
export interface ProcessorPaymentIntentEvent {
  id: string;
  type: 'payment_intent.succeeded' | 'payment_intent.payment_failed';
  data: {
    object: {
      id: string;
      amount: number;
      currency: string;
      metadata?: Record<string, string> | null;
      last_payment_error?: {
        code?: string | null;
        decline_code?: string | null;
        message?: string | null;
      } | null;
    };
  };
}

export const handledProcessorEventTypes: readonly string[] = [
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
];

export type ApplyOutcome =
  | { kind: 'applied'; paymentId: string; status: PaymentStatus }
  | { kind: 'already_terminal'; paymentId: string; status: PaymentStatus }
  /** Authorised: its capture or void is recorded by the worker that ran it, not by an event. */
  | { kind: 'awaiting_capture'; paymentId: string }
  | { kind: 'payment_not_found'; paymentId: string | null }
  | { kind: 'amount_mismatch'; paymentId: string };

/**
 * Applies a PaymentIntent outcome to the tenant's payment, under a row lock. Only a payment
 * still `processing`, `unknown` or `requires_action` (waiting for its 3-D Secure answer)
 * moves; a failed challenge makes it `failed`, not `declined`. A terminal one never moves again (a late or
 * reordered `payment_failed` cannot undo a `succeeded`), so applying the same event twice,
 * or events in any order, leaves the first definite answer. A charge for another amount or
 * currency is not this payment's charge: nothing moves, the reconciler decides.
 *
 * @example
 * await db.transaction((tx) => applyProcessorEvent(tx, 'tenant_a', event));
 */
export async function applyProcessorEvent(
  tx: Transaction,
  tenantId: string,
  event: ProcessorPaymentIntentEvent,
): Promise<ApplyOutcome> {
  const intent = event.data.object;
  const paymentId = intent.metadata?.payment_id ?? null;
  if (!paymentId) return { kind: 'payment_not_found', paymentId: null };
  const [payment] = await tx
    .select()
    .from(payments)
    .where(and(eq(payments.tenantId, tenantId), eq(payments.id, paymentId)))
    .for('update');
  if (!payment) return { kind: 'payment_not_found', paymentId };
  if (isTerminalPayment(payment.status)) {
    return { kind: 'already_terminal', paymentId, status: payment.status };
  }
  if (payment.status === 'authorized') return { kind: 'awaiting_capture', paymentId };
  if (!chargeMatchesPayment(intent, payment)) return { kind: 'amount_mismatch', paymentId };
  const settlement = settlementOf(event);
  await settlePayment(tx, { tenantId, paymentId }, settlement);
  return { kind: 'applied', paymentId, status: settlement.status };
}

function settlementOf(event: ProcessorPaymentIntentEvent): PaymentSettlement {
  const intent = event.data.object;
  if (event.type === 'payment_intent.succeeded') {
    return { status: 'succeeded', processorPaymentIntentId: intent.id };
  }
  const failure = intent.last_payment_error;
  if (isAuthenticationFailure(failure)) {
    return {
      status: 'failed',
      processorPaymentIntentId: intent.id,
      code: declineCodeOf(failure),
      message: failure?.message ?? undefined,
    };
  }
  return {
    status: 'declined',
    processorPaymentIntentId: intent.id,
    code: declineCodeOf(failure),
    message: failure?.message ?? undefined,
  };
}
