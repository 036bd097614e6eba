import { createHash } from 'node:crypto';

/**
 * The one hash every key derived from a client's key goes through: SHA-256 of the parts as a
 * JSON array (so no two part lists meet: `['a', 'b:c']` and `['a:b', 'c']` differ), in hex.
 * The processor never sees the client's text (up to our key limit; Stripe's is 255), and
 * the length is fixed.
 */
export function keyDigest(parts: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}
