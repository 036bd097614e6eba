import { payments } from '@once/db/schema';
import { desc, eq } from 'drizzle-orm';
import type { Database } from '../../database.ts';
import { toPaymentView } from '../checkout/status.ts';
import type { PaymentView } from '../checkout/status.types.ts';
import type { OpsListInput } from './list.types.ts';

export interface OpsPayment extends PaymentView {
  idempotencyKey: string;
  downstreamKey: string;
  processorPaymentIntentId: string | null;
}

/**
 * The tenant's latest payments with the keys that tie them to the checkout intent and to
 * the processor, for the operator cockpit.
 *
 * @example
 * const rows = await listPayments({ ctx: { db, tenantId }, input: { limit: 20 } });
 */
export async function listPayments({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string };
  input: OpsListInput;
}): Promise<OpsPayment[]> {
  const rows = await ctx.db
    .select()
    .from(payments)
    .where(eq(payments.tenantId, ctx.tenantId))
    .orderBy(desc(payments.createdAt), desc(payments.id))
    .limit(input.limit);
  return rows.map((row) => ({
    ...toPaymentView(row),
    idempotencyKey: row.idempotencyKey,
    downstreamKey: row.downstreamKey,
    processorPaymentIntentId: row.processorPaymentIntentId,
  }));
}
