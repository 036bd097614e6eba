import { idempotencyKeys } from '@once/db/schema';
import { and, desc, eq } from 'drizzle-orm';
import type { Database } from '../../database.ts';
import type { IdempotencyKeysInput } from './idempotency-key.types.ts';
import { isoTimes } from './iso-times.ts';

/**
 * The tenant's latest idempotency keys and their states (in_progress, completed, released,
 * unknown, expired), all or those of `input.state`. Stored response bodies are left out: they
 * may hold customer data.
 */
export async function listIdempotencyKeys({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string };
  input: IdempotencyKeysInput;
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
    .where(
      and(
        eq(idempotencyKeys.tenantId, ctx.tenantId),
        input.state ? eq(idempotencyKeys.state, input.state) : undefined,
      ),
    )
    .orderBy(desc(idempotencyKeys.createdAt), desc(idempotencyKeys.key))
    .limit(input.limit);
  return rows.map(isoTimes);
}
