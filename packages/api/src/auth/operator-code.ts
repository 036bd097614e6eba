import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The shortest operator code the API accepts from its environment (ONCE_OPERATOR_CODE): the
 * demo login's only credential, guessed against the session-start rate limit.
 */
export const MIN_OPERATOR_CODE_LENGTH = 12;

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * Whether `given` is the deployment's operator code. Whitespace anywhere in `given` is ignored
 * (a code copied from a terminal may carry some); nothing else is. Compared as SHA-256 digests
 * with `timingSafeEqual`, so neither the length nor a matching prefix shows in the time taken.
 * No code configured matches nothing.
 */
export function operatorCodeMatches(given: string | undefined, expected: string | undefined) {
  if (!expected || given === undefined) return false;
  return timingSafeEqual(digest(given.replace(/\s+/g, '')), digest(expected));
}
