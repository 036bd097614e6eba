import type { Queryable } from './queryable.ts';

/** Where a payment can be moved by the worker and the reconciler. */
export type PaymentSettlement =
  | { status: 'succeeded'; processorPaymentIntentId: string }
  | { status: 'declined'; processorPaymentIntentId?: string; code: string; message?: string }
  | { status: 'unknown'; code: string; message?: string }
  | { status: 'failed'; code: string; message?: string; processorPaymentIntentId?: string }
  /** Back in flight: the reconciler re-enqueued the charge. */
  | { status: 'processing' };

export interface PaymentRef {
  tenantId: string;
  paymentId: string;
}

/**
 * Moves a payment to `settlement.status` if, and only if, it is not terminal yet
 * (`processing` or `unknown`). A succeeded, declined or failed payment never moves again,
 * whoever asks and however late: a stale worker or a reconciler racing a worker cannot
 * overwrite the processor's definite answer. Returns whether the row changed.
 *
 * @example
 * await settlePayment(tx, { tenantId, paymentId }, { status: 'succeeded', processorPaymentIntentId: 'pi_1' });
 */
export async function settlePayment(
  sql: Queryable,
  payment: PaymentRef,
  settlement: PaymentSettlement,
): Promise<boolean> {
  const intentId =
    'processorPaymentIntentId' in settlement ? (settlement.processorPaymentIntentId ?? null) : null;
  const code = 'code' in settlement ? settlement.code : null;
  const message = 'message' in settlement ? (settlement.message ?? null) : null;
  const rows = await sql`
    update payments
    set status = ${settlement.status},
        processor_payment_intent_id = coalesce(${intentId}, processor_payment_intent_id),
        failure_code = ${code},
        failure_message = ${message},
        updated_at = now()
    where tenant_id = ${payment.tenantId} and id = ${payment.paymentId}
      and status in ('processing', 'unknown')
    returning id`;
  return rows.length === 1;
}
