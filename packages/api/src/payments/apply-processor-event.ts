import { type PaymentStatus, payments, terminalPaymentStatuses } from '@once/db/schema';
import { and, eq, sql } from 'drizzle-orm';
import type { Transaction } from '../database.ts';

/** The part of a processor (Stripe-shaped) PaymentIntent event this API reads. */
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
  | { kind: 'payment_not_found'; paymentId: string | null }
  | { kind: 'amount_mismatch'; paymentId: string };

/**
 * Applies a PaymentIntent outcome to the tenant's payment, under a row lock. Only a payment
 * still `processing` or `unknown` moves; a terminal one never moves again (a late or
 * reordered `payment_failed` cannot undo a `succeeded`), so applying the same event twice,
 * or events in any order, leaves the first definite answer.
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
  if (terminalPaymentStatuses.includes(payment.status)) {
    return { kind: 'already_terminal', paymentId, status: payment.status };
  }
  // A charge for another amount is not this payment's charge: leave it to the reconciler.
  if (intent.amount !== payment.amount || intent.currency.toLowerCase() !== payment.currency) {
    return { kind: 'amount_mismatch', paymentId };
  }
  const status: PaymentStatus =
    event.type === 'payment_intent.succeeded' ? 'succeeded' : 'declined';
  const failure = intent.last_payment_error;
  await tx
    .update(payments)
    .set({
      status,
      processorPaymentIntentId: intent.id,
      failureCode:
        status === 'declined' ? (failure?.decline_code ?? failure?.code ?? 'declined') : null,
      failureMessage: status === 'declined' ? (failure?.message ?? null) : null,
      updatedAt: sql`now()`,
    })
    .where(and(eq(payments.tenantId, tenantId), eq(payments.id, paymentId)));
  return { kind: 'applied', paymentId, status };
}
