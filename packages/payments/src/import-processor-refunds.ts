import { runStatement, type SqlRunner } from '@once/postgres/sql';
import { sql } from 'drizzle-orm';
import type { ProcessorRefund } from './record-processor-refunds.ts';
import { refundStatusOfProcessor } from './refund-states.ts';
import { keyDigest } from './request-key.ts';
import type { PaymentRef } from './settle-payment.ts';

/** A processor Refund as its list gives it, with what a refund row is made of. */
export interface ListedProcessorRefund extends ProcessorRefund {
  amount: number;
  reason?: string | null;
}

/** The refund reasons a refund row may hold (Stripe's; the table checks them). */
const REASONS = new Set(['duplicate', 'fraudulent', 'requested_by_customer']);
/** An id the app made (`refundIdFor`, or a random one before): kept when it comes back. */
const REFUND_ID = /^rf_[0-9a-f]{32}$/;

/**
 * Writes, for a payment that took over an intent from an earlier payment of its checkout (its
 * row lost to a failover), every refund the processor made on that intent and the payment does
 * not hold yet (de-duplicated by the processor's refund id and by the app's refund id in its
 * metadata), so the app shows what the processor gave back. Each keeps the app's refund id from
 * its metadata, so the operator's retry of that refund under its key finds it (`refundIdFor`)
 * instead of asking the processor again; its downstream key says it was imported (no job sends
 * it). Under the payment's row lock, as refund requests are. Returns the imported ids.
 */
export async function importProcessorRefunds(
  tx: SqlRunner,
  payment: PaymentRef,
  listed: readonly ListedProcessorRefund[],
): Promise<string[]> {
  await runStatement(
    tx,
    sql`select id from payments
        where tenant_id = ${payment.tenantId} and id = ${payment.paymentId} for update`,
  );
  const held = await runStatement<{ id: string; processor_refund_id: string | null }>(
    tx,
    sql`select id, processor_refund_id from refunds
        where tenant_id = ${payment.tenantId} and payment_id = ${payment.paymentId}`,
  );
  const heldIds = new Set(held.flatMap((row) => [row.id, row.processor_refund_id]));
  const imported: string[] = [];
  for (const refund of listed) {
    const status = refundStatusOfProcessor(refund.status);
    const appId = refund.metadata?.refund_id;
    if (!status || heldIds.has(refund.id) || (appId && heldIds.has(appId))) continue;
    const id =
      appId && REFUND_ID.test(appId)
        ? appId
        : `rf_${keyDigest(['imported_refund', payment.tenantId, refund.id]).slice(0, 32)}`;
    const rows = await runStatement<{ id: string }>(
      tx,
      sql`insert into refunds (tenant_id, id, payment_id, amount, reason, status,
                               processor_refund_id, downstream_key, requested_by, failure_code)
          values (${payment.tenantId}, ${id}, ${payment.paymentId}, ${refund.amount},
                  ${refund.reason && REASONS.has(refund.reason) ? refund.reason : null},
                  ${status}, ${refund.id}, ${`imported:${refund.id}`}, 'processor',
                  ${status === 'failed' ? (refund.failure_reason ?? 'refund_failed') : null})
          on conflict do nothing
          returning id`,
    );
    if (rows.length === 1) imported.push(id);
  }
  return imported;
}
