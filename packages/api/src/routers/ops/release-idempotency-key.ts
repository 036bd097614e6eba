import type { KeyOperator } from '@once/idempotency/drizzle/operator';
import {
  type IdempotencyKeyActionInput,
  keyOperatorRefusalToApiError,
  type OpsKeyAuditEntry,
  toOpsKeyAuditEntry,
} from './idempotency-key.types.ts';

/**
 * Releases one idempotency key of the caller's tenant: an expired lease that committed nothing, or an `unknown` key the operator reconciled as "nothing happened" (the key may run again). Refused unless the key is
 * still at the `revision` the operator saw (`idempotency_key_changed`); audited with the
 * operator's principal and reason in `idempotency_key_audit`.
 *
 * @example
 * await releaseIdempotencyKey({ ctx: { keyOperator, tenantId, principal }, input: { operation, key, revision, reason: 'INC-42' } });
 */
export async function releaseIdempotencyKey({
  ctx,
  input,
}: {
  ctx: { keyOperator: KeyOperator; tenantId: string; principal: string };
  input: IdempotencyKeyActionInput;
}): Promise<OpsKeyAuditEntry> {
  const { revision, reason, ...key } = input;
  try {
    const entry = await ctx.keyOperator.release(
      { tenantId: ctx.tenantId, ...key },
      { revision, reason, actor: ctx.principal },
    );
    return toOpsKeyAuditEntry(entry);
  } catch (error) {
    throw keyOperatorRefusalToApiError(error);
  }
}
