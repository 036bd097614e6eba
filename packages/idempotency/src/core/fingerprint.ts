import * as crypto from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';

/**
 * Fingerprint of a request: hex SHA-256 of the RFC 8785 (JCS) canonical JSON of
 * `{ operation, input }`. JCS sorts keys, drops insignificant whitespace and spells numbers
 * one way (`1.0` and `1` are the same number), so a semantically equal retry never gets a
 * false 422, while any real difference in value changes the hash.
 *
 * `undefined` input is treated as `null`. Input that is not plain JSON data is refused with
 * `idempotency_input_invalid` (400) rather than fingerprinted as something it is not (see
 * `canonicalJson`: BigInt, functions, NaN, cycles, Map, Set, class instances, ...). Objects
 * with `toJSON` (Date) are taken as what it returns.
 */
export function computeFingerprint(operation: string, input: unknown): string {
  const value = canonicalJson(input === undefined ? null : input);
  // The keys of `{ operation, input }` in JCS order (`input` sorts first), written out.
  return sha256Hex(`{"input":${value},"operation":${canonicalJson(operation)}}`);
}

/**
 * Hex SHA-256 of a string's UTF-8 or of bytes. One-shot `crypto.hash` where Node has it
 * (20.12+, 21.7+), else `createHash().update().digest()`: the same bytes out.
 */
export const sha256Hex: (data: string | Uint8Array) => string =
  typeof (crypto as { hash?: unknown }).hash === 'function'
    ? (data) =>
        (crypto as unknown as { hash(a: string, d: string | Uint8Array, e: 'hex'): string }).hash(
          'sha256',
          data,
          'hex',
        )
    : (data) => crypto.createHash('sha256').update(data).digest('hex');
