import type { OpsKeyAuditEntry } from './idempotency-key.types.ts';
import { type KeyActionRequest, runKeyAction } from './run-key-action.ts';

/**
 * Releases one idempotency key of the caller's tenant: an expired lease that committed nothing, or an `unknown` key the operator reconciled as "nothing happened" (the key may run again). Refused unless the key is
 * still at the `revision` the operator saw (`idempotency_key_changed`); audited with the
 * operator's principal and reason in `idempotency_key_audit`.
 *
 * @example
 * await releaseIdempotencyKey({ ctx: { keyOperator, tenantId, principal }, input: { operation, key, revision, reason: 'INC-42' } });
 */
export function releaseIdempotencyKey(request: KeyActionRequest): Promise<OpsKeyAuditEntry> {
  return runKeyAction('release', request);
}
