import { createHash } from 'node:crypto';

/**
 * The caller's Idempotency-Key as the key store scopes it: the operation (`ops.refundPayment`,
 * a REST or GraphQL operation: each transport's keys are its own) and the key. With the
 * tenant it names one request for ever, whatever happened to its rows.
 */
export interface RequestKey {
  scope: string;
  key: string;
}

/**
 * The one hash every key derived from a client's key goes through: SHA-256 of the parts as a
 * JSON array (so no two part lists meet: `['a', 'b:c']` and `['a:b', 'c']` differ), in hex.
 * The processor never sees the client's text (up to our key limit; Stripe's is 255), and
 * the length is fixed.
 *
 * @example
 * keyDigest(['tenant_a', 'checkout-1']); // 64 hex digits
 */
export function keyDigest(parts: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}
