import { randomInt } from 'node:crypto';

/** Lower-case letters and digits without the look-alikes (0/o, 1/l/i): read off a terminal. */
const ALPHABET = '23456789abcdefghjkmnpqrstuvwxyz';

/**
 * A fresh operator code for one run of the demo (ONCE_OPERATOR_CODE of the web process): 15
 * characters from 31 (74 bits) in groups of five, e.g. `k7pq4-mzt9x-wa2bc`. The launcher prints
 * it; whoever reads the terminal may sign in as an operator, a visitor of the page may not.
 * Guessing it runs into `session.start`'s per-address limit long before it could succeed.
 *
 * @example
 * newOperatorCode(); // 'k7pq4-mzt9x-wa2bc'
 */
export function newOperatorCode(): string {
  const chars = Array.from({ length: 15 }, () => ALPHABET[randomInt(ALPHABET.length)]);
  return [0, 5, 10].map((at) => chars.slice(at, at + 5).join('')).join('-');
}
