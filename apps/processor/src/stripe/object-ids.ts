import { randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * A Stripe-style object id: prefix, underscore, 24 random alphanumerics.
 *
 * @example
 * newObjectId('pi') // 'pi_3Pq0aZ...'
 */
export function newObjectId(prefix: 'pi' | 'ch' | 're' | 'evt' | 'fault' | 'pm'): string {
  const bytes = randomBytes(24);
  let out = '';
  for (const byte of bytes) out += ALPHABET[byte % ALPHABET.length];
  return `${prefix}_${out}`;
}
