import { randomInt } from 'node:crypto';

/** Lower-case letters and digits without the look-alikes (0/o, 1/l/i): read off a terminal. */
const ALPHABET = '23456789abcdefghjkmnpqrstuvwxyz';

/**
 * A fresh operator code for one run of the demo (the web's ONCE_OPERATOR_CODE): 15 characters
 * from 31 (74 bits) in groups of five, e.g. `k7pq4-mzt9x-wa2bc`, printed by the launcher.
 */
export function newOperatorCode(): string {
  const chars = Array.from({ length: 15 }, () => ALPHABET[randomInt(ALPHABET.length)]);
  return [0, 5, 10].map((at) => chars.slice(at, at + 5).join('')).join('-');
}
