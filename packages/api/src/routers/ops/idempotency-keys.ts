import { idempotencyKeys } from '@once/db/schema';
import { desc, eq } from 'drizzle-orm';
import type { Database } from '../../database.ts';
import { isoTimes } from './iso-times.ts';
import type { OpsListInput } from './list.types.ts';

/**
 * The tenant's latest idempotency keys and their states (in_progress, completed, released,
 * unknown). Stored response bodies are left out: they may hold customer data.
 */
export async function listIdempotencyKeys({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string };
  input: OpsListInput;
}) {
  const rows = await ctx.db
    .select({
      operation: idempotencyKeys.operation,
      key: idempotencyKeys.key,
      state: idempotencyKeys.state,
      recoveryPoint: idempotencyKeys.recoveryPoint,
      attempts: idempotencyKeys.attempts,
      responseStatus: idempotencyKeys.responseStatus,
      lockedUntil: idempotencyKeys.lockedUntil,
      createdAt: idempotencyKeys.createdAt,
      completedAt: idempotencyKeys.completedAt,
      expiresAt: idempotencyKeys.expiresAt,
    })
    .from(idempotencyKeys)
    .where(eq(idempotencyKeys.tenantId, ctx.tenantId))
    .orderBy(desc(idempotencyKeys.createdAt), desc(idempotencyKeys.key))
    .limit(input.limit);
  return rows.map(isoTimes);
}
