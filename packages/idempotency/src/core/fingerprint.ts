import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/**
 * Fingerprint of a request: hex SHA-256 of the RFC 8785 (JCS) canonical JSON of
 * `{ operation, input }`. JCS sorts keys, drops insignificant whitespace and spells numbers
 * one way (`1.0` and `1` are the same number), so a semantically equal retry never gets a
 * false 422, while any real difference in value changes the hash.
 *
 * `undefined` input is treated as `null`; values JSON cannot express (functions, symbols, BigInt)
 * are rejected rather than silently dropped.
 *
 * @example
 * computeFingerprint('checkout.pay', { b: 1, a: 2 }) === computeFingerprint('checkout.pay', { a: 2, b: 1.0 }); // true
 */
export function computeFingerprint(operation: string, input: unknown): string {
  const canonical = canonicalize({ operation, input: input === undefined ? null : input });
  if (canonical === undefined)
    throw new TypeError('Idempotency fingerprint input is not JSON-serialisable');
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}
