import { payments } from '@once/db/schema';
import { and, count, eq, gte, inArray } from 'drizzle-orm';
import { z } from 'zod';
import type { Database } from '../../database.ts';

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
export async function countStuckPayments({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string };
  input: z.infer<typeof stuckPaymentsInput>;
}): Promise<{ stuck: number; afterChecks: number }> {
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
