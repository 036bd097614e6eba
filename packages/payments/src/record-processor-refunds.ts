import { refunds } from '@once/db/schema';
import { and, eq } from 'drizzle-orm';
import type { Transaction } from './apply-processor-event.ts';
import { canRecordRefund, refundStatusOfProcessor } from './refund-states.ts';

/**
 * The events of a refund's life as Stripe sends them: `refund.created` (a refund was made,
 * maybe `pending`), `refund.updated` (its status changed: a pending one succeeded),
 * `refund.failed` (it failed, even after succeeding: the money came back), each with the
 * Refund; and `charge.refunded` with the Charge (its `amount_refunded`, no list of refunds in
 * current API versions).
 */
export const refundEventTypes: readonly string[] = [
  'refund.created',
  'refund.updated',
  'refund.failed',
  'charge.refunded',
];

export const isRefundEventType = (type: string): boolean => refundEventTypes.includes(type);

/** The fields of a processor (Stripe-shaped) Refund that are recorded. */
export interface ProcessorRefund {
  id: string;
  status: string | null;
  failure_reason?: string | null;
  metadata?: Record<string, string> | null;
}

/** One refund a processor answer moved. */
export interface RefundMove {
  refundId: string;
  from: string;
  to: string;
}

/**
 * Moves each of the payment's refunds to the status the processor lists for it (matched by
 * the refund id the worker put in its metadata, or the processor's id once recorded), under
 * the refunds' row locks, where the refund lifecycle allows (`canRecordRefund`: a late
 * `succeeded` never undoes a `failed`); the same rule guards the worker's refund job writes.
 */
export async function recordProcessorRefunds(
  tx: Transaction,
  tenantId: string,
  paymentId: string,
  listed: readonly ProcessorRefund[],
): Promise<RefundMove[]> {
  const rows = await tx
    .select({
      id: refunds.id,
      status: refunds.status,
      processorRefundId: refunds.processorRefundId,
    })
    .from(refunds)
    .where(and(eq(refunds.tenantId, tenantId), eq(refunds.paymentId, paymentId)))
    .for('update');
  const moved: RefundMove[] = [];
  for (const row of rows) {
    const found = listed.find(
      (r) => r.metadata?.refund_id === row.id || r.id === row.processorRefundId,
    );
    const to = refundStatusOfProcessor(found?.status);
    if (!found || !to || to === row.status || !canRecordRefund(row.status, to)) continue;
    await tx
      .update(refunds)
      .set({
        status: to,
        processorRefundId: found.id,
        failureCode: to === 'failed' ? (found.failure_reason ?? 'refund_failed') : null,
        failureMessage: null,
        updatedAt: new Date(),
      })
      .where(and(eq(refunds.tenantId, tenantId), eq(refunds.id, row.id)));
    moved.push({ refundId: row.id, from: row.status, to });
  }
  return moved;
}
