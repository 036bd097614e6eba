import { outboxJobs, payments } from '@once/db/schema';
import { and, count, desc, eq, gte, inArray } from 'drizzle-orm';
import { z } from 'zod';
import { toPaymentView } from '../../checkout/status.ts';
import type { Database } from '../../database.ts';
import { isoTimes } from './iso-times.ts';

/** Every operator list: newest first, at most `limit` rows, always the caller's tenant. */
export const opsListInput = z
  .object({ limit: z.number().int().min(1).max(200).default(50) })
  .default({ limit: 50 });
export type OpsListInput = z.infer<typeof opsListInput>;

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
export async function listPayments(ctx: { db: Database; tenantId: string }, input: OpsListInput) {
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

/** The tenant's latest outbox jobs: what the workers have claimed, retried or given up on. */
export async function listOutboxJobs(ctx: { db: Database; tenantId: string }, input: OpsListInput) {
  const rows = await ctx.db
    .select()
    .from(outboxJobs)
    .where(eq(outboxJobs.tenantId, ctx.tenantId))
    .orderBy(desc(outboxJobs.createdAt), desc(outboxJobs.id))
    .limit(input.limit);
  // The list leaves out the payload and the claim's `lock_token`.
  return rows.map(({ id, tenantId, payload, lockToken, ...row }) => ({
    jobId: id,
    ...isoTimes(row),
  }));
}

/** The worker's default for `WORKER_RECONCILE_STUCK_AFTER_CHECKS`. */
const DEFAULT_STUCK_AFTER_CHECKS = 5;

export const stuckPaymentsInput = z
  .object({ afterChecks: z.number().int().min(1).max(1000).default(DEFAULT_STUCK_AFTER_CHECKS) })
  .default({ afterChecks: DEFAULT_STUCK_AFTER_CHECKS });

/**
 * How many of the tenant's payments are stuck undecided: still `processing`/`unknown` after
 * the reconciler looked at them `afterChecks` times or more (the worker's
 * `WORKER_RECONCILE_STUCK_AFTER_CHECKS`, default 5). Should be 0; anything else needs an operator.
 */
export async function countStuckPayments(
  ctx: { db: Database; tenantId: string },
  input: z.infer<typeof stuckPaymentsInput>,
): Promise<{ stuck: number; afterChecks: number }> {
  const [row] = await ctx.db
    .select({ n: count() })
    .from(payments)
    .where(
      and(
        eq(payments.tenantId, ctx.tenantId),
        inArray(payments.status, ['processing', 'unknown']),
        gte(payments.reconcileChecks, input.afterChecks),
      ),
    );
  return { stuck: row?.n ?? 0, afterChecks: input.afterChecks };
}
