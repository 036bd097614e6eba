import type { Database } from '@once/db';
import { type PaymentStatus, payments } from '@once/db/schema';
import { and, eq } from 'drizzle-orm';
import { chargeMatchesPayment } from './charge-amount.ts';
import { declineCodeOf } from './decline-code.ts';
import { isTerminalPayment } from './payment-states.ts';
import { type PaymentSettlement, settlePayment } from './settle-payment.ts';
import { isAuthenticationFailure } from './three-d-secure-failure.ts';

/** A transaction of the application database, as drizzle hands it to `db.transaction`. */
export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

/** The part of a processor (Stripe-shaped) PaymentIntent event the webhook receiver reads. */
export interface ProcessorPaymentIntentEvent {
  id: string;
  type: 'payment_intent.succeeded' | 'payment_intent.payment_failed' | 'payment_intent.canceled';
  data: {
    object: {
      id: string;
      amount: number;
      currency: string;
      metadata?: Record<string, string> | null;
      /** On `payment_intent.canceled`: `automatic` when the processor ended an authorisation. */
      cancellation_reason?: string | null;
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
  'payment_intent.canceled',
];

/** Why a voided payment's authorisation ended without an operator: it expired uncaptured. */
const AUTHORIZATION_EXPIRED_CODE = 'authorization_expired';

export type ApplyOutcome =
  | { kind: 'applied'; paymentId: string; status: PaymentStatus }
  | { kind: 'already_terminal'; paymentId: string; status: PaymentStatus }
  /** Authorised: its capture or void is recorded by the worker that ran it, not by an event. */
  | { kind: 'awaiting_capture'; paymentId: string }
  /** A cancel of a charge still in flight or awaiting 3-D Secure: the worker and reconciler's. */
  | { kind: 'left_to_worker'; paymentId: string }
  | { kind: 'payment_not_found'; paymentId: string | null }
  | { kind: 'amount_mismatch'; paymentId: string };

/**
 * Applies a PaymentIntent outcome to the tenant's payment, under a row lock. Only a payment
 * still `processing`, `unknown` or `requires_action` (waiting for its 3-D Secure answer)
 * moves on a charge's outcome, and only an `authorized` one on a cancel the processor made by
 * itself (`cancellation_reason: automatic`: the authorisation expired) to `voided`; a failed challenge makes it `failed`, not `declined`. A terminal one never moves again (a late or
 * reordered `payment_failed` cannot undo a `succeeded`), so applying the same event twice,
 * or events in any order, leaves the first definite answer. A charge for another amount or
 * currency is not this payment's charge: nothing moves, the reconciler decides.
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
  if (event.type === 'payment_intent.canceled') {
    // Only the processor's own end of an authorisation (its window passed) is settled here;
    // an operator's void is recorded by the worker that sent it, with its action.
    if (payment.status !== 'authorized' || intent.cancellation_reason !== 'automatic') {
      return payment.status === 'authorized'
        ? { kind: 'awaiting_capture', paymentId }
        : { kind: 'left_to_worker', paymentId };
    }
    if (!chargeMatchesPayment(intent, payment)) return { kind: 'amount_mismatch', paymentId };
    await settlePayment(tx, { tenantId, paymentId }, authorizationExpired(intent.id));
    return { kind: 'applied', paymentId, status: 'voided' };
  }
  if (payment.status === 'authorized') return { kind: 'awaiting_capture', paymentId };
  if (!chargeMatchesPayment(intent, payment)) return { kind: 'amount_mismatch', paymentId };
  const settlement = settlementOf(event);
  await settlePayment(tx, { tenantId, paymentId }, settlement);
  return { kind: 'applied', paymentId, status: settlement.status };
}

/**
 * The settlement of an authorisation the processor canceled when its window passed
 * (`cancellation_reason: automatic`): `voided`, nothing captured, the hold released. The one
 * description of it, for the webhook path and the reconciler's pass alike.
 */
export function authorizationExpired(intentId: string): PaymentSettlement {
  return {
    status: 'voided',
    code: AUTHORIZATION_EXPIRED_CODE,
    message: `the authorisation expired uncaptured: the processor canceled ${intentId} and released the funds`,
  };
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
