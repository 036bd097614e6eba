import type { OpsKeyAuditEntry } from './idempotency-key.types.ts';
import { type KeyActionRequest, runKeyAction } from './run-key-action.ts';

/**
 * Evicts one idempotency key of the caller's tenant: a `completed` or `released` key, deleted before its retention ends (the key's next request runs again). Refused unless the key is
 * still at the `revision` the operator saw (`idempotency_key_changed`); audited with the
 * operator's principal and reason in `idempotency_key_audit`.
 *
 * @example
 * await evictIdempotencyKey({ ctx: { keyOperator, tenantId, principal }, input: { operation, key, revision, reason: 'INC-42' } });
 */
export function evictIdempotencyKey(request: KeyActionRequest): Promise<OpsKeyAuditEntry> {
  return runKeyAction('evict', request);
}
