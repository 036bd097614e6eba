import { type RefundStatus, refunds } from '@once/db/schema';
import { and, asc, eq } from 'drizzle-orm';
import type { Queryable } from '../database.ts';
import type { RefundResult } from './refund-payment.types.ts';

/**
 * A refund's status as a merchant reads it, in Stripe's Refund words: `pending` until the
 * processor's definite answer (written, sent, or unknown and being reconciled), then
 * `succeeded` or `failed`.
 */
type MerchantRefundStatus = 'pending' | 'succeeded' | 'failed';

/** A refund as the REST API and GraphQL show it. */
export interface MerchantRefund {
  refundId: string;
  paymentId: string;
  /** Minor units (cents). */
  amount: number;
  status: MerchantRefundStatus;
  reason: string | null;
  /** The processor's refusal or failure code, once `failed`. */
  failureCode: string | null;
  /** ISO 8601. */
  createdAt: string;
}

/** The one mapping of a refund's internal state to the merchant's. */
function merchantRefundStatus(status: RefundStatus): MerchantRefundStatus {
  return status === 'succeeded' || status === 'failed' ? status : 'pending';
}

/** The answer to a refund request as the merchant sees it (what `refundPayment` wrote). */
export function merchantRefundOf(result: RefundResult, reason: string | null): MerchantRefund {
  const { createdAt, ...written } = result;
  return {
    ...written,
    status: merchantRefundStatus(result.status),
    reason,
    failureCode: null,
    createdAt,
  };
}

/**
 * Every refund of one payment of the tenant, oldest first (the payment itself is not looked
 * up: read it first to tell an unknown payment from one without refunds).
 */
export async function listMerchantRefunds(
  db: Queryable,
  tenantId: string,
  paymentId: string,
): Promise<MerchantRefund[]> {
  const rows = await db
    .select()
    .from(refunds)
    .where(and(eq(refunds.tenantId, tenantId), eq(refunds.paymentId, paymentId)))
    .orderBy(asc(refunds.createdAt), asc(refunds.id));
  return rows.map((row) => ({
    refundId: row.id,
    paymentId: row.paymentId,
    amount: row.amount,
    status: merchantRefundStatus(row.status),
    reason: row.reason,
    failureCode: row.failureCode,
    createdAt: row.createdAt.toISOString(),
  }));
}
