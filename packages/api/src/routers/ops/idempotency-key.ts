import type { KeyOperator } from '@once/idempotency/drizzle/operator';
import type { IdempotencyKeyInput, OpsKeySummary } from './idempotency-key.types.ts';
import { isoTimes } from './iso-times.ts';

/**
 * One idempotency key of the caller's tenant as the operator sees it (state, recovery point,
 * attempts, lease, times, fingerprint prefix, the `revision` to act on, and whether release
 * or evict would be accepted), or null. Never the stored response body.
 */
export async function inspectIdempotencyKey({
  ctx,
  input,
}: {
  ctx: { keyOperator: KeyOperator; tenantId: string };
  input: IdempotencyKeyInput;
}): Promise<OpsKeySummary | null> {
  const found = await ctx.keyOperator.inspect({ tenantId: ctx.tenantId, ...input });
  return found ? isoTimes(found) : null;
}
