import { keyDigest } from './request-key.ts';

/**
 * A refund's id: `rf_` and 32 hex digits derived from (tenant, the caller's Idempotency-Key)
 * (the processor's own are `re_...`). Not from the transport or operation: a key is one money
 * action on every transport, so the same key on REST, GraphQL and the cockpit names the same
 * refund. Derived, not random, because it travels in the refund's metadata, which the
 * processor compares like every other parameter when a key is replayed: a refund requested
 * again after its row was lost (a failover dropped the acknowledged commit, the operator
 * retries with the same key) gets the same id, sends the same request and is answered with
 * the first refund instead of being refused as a reused key.
 */
export function refundIdFor(tenantId: string, key: string): string {
  return `rf_${keyDigest(['refund_id', tenantId, key]).slice(0, 32)}`;
}

/**
 * The downstream Idempotency-Key of one refund: derived from (tenant, the caller's key), as a
 * charge's is from its checkout key, so every attempt of its job AND the refund requested
 * again after its row was lost send the same, and the processor replays the first refund
 * instead of giving the money back twice. Two keys never share one. Refunds keep the key
 * recorded on their row and job, so keys issued before are unchanged.
 */
export function refundDownstreamKeyFor(tenantId: string, key: string): string {
  return `once_rf_${keyDigest(['refund', tenantId, key])}`;
}
