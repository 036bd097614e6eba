import { type PaymentStatus, paymentActions, payments, refunds } from '@once/db/schema';
import { and, eq, getTableColumns, ne, sql } from 'drizzle-orm';
import { type PaymentView, toPaymentView } from '../checkout/status.ts';
import type { Queryable } from '../database.ts';
import { ApiError } from '../errors/api-error.ts';

/**
 * A payment's internal state as a merchant's API client reads it, in Stripe's PaymentIntent
 * words where Stripe has one (a voided payment or an abandoned challenge `canceled`, a captured
 * one `succeeded`). An authorised payment is `requires_capture`, or `processing` while its
 * capture or void is under way (accepted, not yet answered by the processor).
 */
const MERCHANT_STATUS = {
  processing: 'processing',
  unknown: 'unknown',
  succeeded: 'succeeded',
  declined: 'declined',
  failed: 'failed',
  captured: 'succeeded',
  voided: 'canceled',
  requires_action: 'requires_action',
  canceled: 'canceled',
} as const satisfies Record<Exclude<PaymentStatus, 'authorized'>, string>;

type MerchantPaymentStatus =
  | (typeof MERCHANT_STATUS)[keyof typeof MERCHANT_STATUS]
  | 'requires_capture';

/**
 * A payment as `GET /api/v1/payments/{id}` and GraphQL's `Payment` show it: the checkout's view
 * (with 3-D Secure's `nextAction`), the merchant's status, and its money in Stripe's terms
 * (`amount_capturable`, `amount_received`) plus what its refunds not failed take back.
 */
export interface MerchantPayment extends Omit<PaymentView, 'status'> {
  status: MerchantPaymentStatus;
  captureMethod: 'automatic' | 'manual';
  /** What a capture may still take: the authorised amount, while it `requires_capture`. */
  amountCapturable: number;
  /** What the processor charged: a succeeded payment's amount, a captured one's captured part. */
  amountReceived: number;
  /** Every refund of it that has not failed (requested, pending or succeeded). */
  amountRefunded: number;
}

/**
 * One payment of the tenant as its merchant reads it, from the database or from inside the
 * transaction that just acted on it (so an accepted capture already reads `processing`).
 * Another tenant's id answers `payment_not_found`, like one that does not exist.
 */
export async function readMerchantPayment(
  db: Queryable,
  tenantId: string,
  paymentId: string,
): Promise<MerchantPayment> {
  const [found] = await db
    .select({
      row: getTableColumns(payments),
      // The conditions as drizzle operators: they qualify columns, where a raw template inside
      // a select list leaves them bare (and `payment_id = id` would compare the refund's own).
      refunded: sql<number>`(select coalesce(sum(${refunds.amount}), 0)::int from ${refunds}
        where ${and(
          eq(refunds.tenantId, payments.tenantId),
          eq(refunds.paymentId, payments.id),
          ne(refunds.status, 'failed'),
        )})`,
      actionUnderWay: sql<boolean>`exists (select 1 from ${paymentActions}
        where ${and(
          eq(paymentActions.tenantId, payments.tenantId),
          eq(paymentActions.paymentId, payments.id),
          ne(paymentActions.status, 'failed'),
        )})`,
    })
    .from(payments)
    .where(and(eq(payments.tenantId, tenantId), eq(payments.id, paymentId)))
    .limit(1);
  if (!found) throw new ApiError('payment_not_found', undefined, { paymentId });
  const { row, refunded, actionUnderWay } = found;
  const status: MerchantPaymentStatus =
    row.status !== 'authorized'
      ? MERCHANT_STATUS[row.status]
      : actionUnderWay
        ? 'processing'
        : 'requires_capture';
  return {
    ...toPaymentView(row),
    status,
    captureMethod: row.captureMethod,
    amountCapturable: status === 'requires_capture' ? row.amount : 0,
    amountReceived: amountReceived(row),
    amountRefunded: refunded,
  };
}

/** What the processor charged for the payment (what a refund may give back, at most). */
function amountReceived(row: {
  status: PaymentStatus;
  amount: number;
  amountCaptured: number | null;
}) {
  if (row.status === 'succeeded') return row.amount;
  if (row.status === 'captured') return row.amountCaptured ?? 0;
  return 0;
}
