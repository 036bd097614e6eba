import { payments } from '@once/db/schema';
import { desc, eq } from 'drizzle-orm';
import { toPaymentView } from '../../checkout/status.ts';
import type { Database } from '../../database.ts';
import type { OpsListInput } from './list.types.ts';

/**
 * The tenant's newest `limit` payment rows (newest first; id breaks ties), as stored. The one
 * query behind both the payments list and the ledger comparison.
 */
export function latestPaymentsOf(db: Database, tenantId: string, limit: number) {
  return db
    .select()
    .from(payments)
    .where(eq(payments.tenantId, tenantId))
    .orderBy(desc(payments.createdAt), desc(payments.id))
    .limit(limit);
}

/**
 * The tenant's latest payments with the keys that tie them to the checkout intent and to
 * the processor, for the operator cockpit.
 */
export async function listPayments({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string };
  input: OpsListInput;
}) {
  const rows = await latestPaymentsOf(ctx.db, ctx.tenantId, input.limit);
  return rows.map((row) => ({
    ...toPaymentView(row),
    idempotencyKey: row.idempotencyKey,
    downstreamKey: row.downstreamKey,
    processorPaymentIntentId: row.processorPaymentIntentId,
    // Reconciler checks that left it undecided (many while unsettled: stuck), and its next one.
    reconcileChecks: row.reconcileChecks,
    nextReconcileAt: row.reconcileAfter?.toISOString() ?? null,
  }));
}
