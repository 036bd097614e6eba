import type { KeyOperator } from '@once/idempotency/drizzle/operator';
import {
  type IdempotencyKeyActionInput,
  keyOperatorRefusalToApiError,
  type OpsKeyAuditEntry,
} from './idempotency-key.types.ts';
import { isoTimes } from './iso-times.ts';

interface KeyActionRequest {
  ctx: { keyOperator: KeyOperator; tenantId: string; principal: string };
  input: IdempotencyKeyActionInput;
}

/**
 * The one path of an operator's key action (`ops.releaseIdempotencyKey`,
 * `ops.evictIdempotencyKey`): scoped to the caller's tenant, refused unless the key is still
 * at the `revision` the operator saw (`idempotency_key_changed`), audited with the operator's
 * principal and reason in `idempotency_key_audit`; a refusal becomes its stable API code.
 */
export async function runKeyAction(
  action: 'release' | 'evict',
  { ctx, input }: KeyActionRequest,
): Promise<OpsKeyAuditEntry> {
  const { revision, reason, ...key } = input;
  try {
    const entry = await ctx.keyOperator[action](
      { tenantId: ctx.tenantId, ...key },
      { revision, reason, actor: ctx.principal },
    );
    return isoTimes(entry);
  } catch (error) {
    throw keyOperatorRefusalToApiError(error);
  }
}
