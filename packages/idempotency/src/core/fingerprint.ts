import * as crypto from 'node:crypto';
import canonicalize from 'canonicalize';
import { IdempotencyError } from './errors.ts';

/**
 * How deep a fingerprint input may nest. Real request inputs are a few levels deep; the cap
 * makes a small body of nested arrays (`[[[[...]]]]`, 6 KB is 3,000 levels) a 400 instead of a
 * stack overflow in the canonicalisation.
 */
const MAX_FINGERPRINT_DEPTH = 64;

/**
 * Fingerprint of a request: hex SHA-256 of the RFC 8785 (JCS) canonical JSON of
 * `{ operation, input }`. JCS sorts keys, drops insignificant whitespace and spells numbers
 * one way (`1.0` and `1` are the same number), so a semantically equal retry never gets a
 * false 422, while any real difference in value changes the hash.
 *
 * `undefined` input is treated as `null`. Input that is not plain JSON data is refused with
 * `idempotency_input_invalid` (400) rather than fingerprinted as something it is not: BigInt,
 * functions, symbols, NaN/Infinity, cycles, nesting deeper than `MAX_FINGERPRINT_DEPTH`, and
 * objects JSON would flatten to `{}` or to another value's form (Map, Set, typed arrays, Blob,
 * class instances). Objects with `toJSON` (Date) are taken as what it returns.
 *
 * @example
 * computeFingerprint('checkout.pay', { b: 1, a: 2 }) === computeFingerprint('checkout.pay', { a: 2, b: 1.0 }); // true
 */
export function computeFingerprint(operation: string, input: unknown): string {
  const value = input === undefined ? null : input;
  assertPlainData(value, 0, new Set());
  let canonical: string | undefined;
  try {
    canonical = canonicalize({ operation, input: value });
  } catch (error) {
    // What is left: lone surrogates in strings.
    throw invalidInput(error instanceof Error ? error.message : String(error), error);
  }
  if (canonical === undefined) throw invalidInput('it is not JSON-serialisable');
  return sha256Hex(canonical);
}

function invalidInput(reason: string, cause?: unknown): IdempotencyError {
  return new IdempotencyError('idempotency_input_invalid', {
    message: `The request input cannot be fingerprinted: ${reason}`,
    cause,
  });
}

/** Walk `value` (bounded by the depth cap, so never deep recursion) and refuse what is not plain JSON data. */
function assertPlainData(value: unknown, depth: number, ancestors: Set<object>): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined': // an absent property, or null in an array: JSON's own meaning
      return;
    case 'number':
      if (!Number.isFinite(value)) throw invalidInput(`${value} is not a JSON number`);
      return;
    case 'bigint':
    case 'function':
    case 'symbol':
      throw invalidInput(`a ${typeof value} is not JSON`);
  }
  if (value === null) return;
  const object = value as object;
  if (depth >= MAX_FINGERPRINT_DEPTH)
    throw invalidInput(`it nests deeper than ${MAX_FINGERPRINT_DEPTH} levels`);
  if (ancestors.has(object)) throw invalidInput('it is cyclic');
  if (typeof (object as { toJSON?: unknown }).toJSON === 'function') {
    ancestors.add(object);
    assertPlainData((object as { toJSON(): unknown }).toJSON(), depth + 1, ancestors);
    ancestors.delete(object);
    return;
  }
  const proto = Object.getPrototypeOf(object);
  if (!Array.isArray(object) && proto !== Object.prototype && proto !== null) {
    const name = (proto as { constructor?: { name?: string } }).constructor?.name ?? 'object';
    throw invalidInput(
      `a ${name} is not plain JSON data (pass getFingerprintInput with what identifies the request)`,
    );
  }
  ancestors.add(object);
  for (const item of Object.values(object)) assertPlainData(item, depth + 1, ancestors);
  ancestors.delete(object);
}

/**
 * Hex SHA-256 of a string's UTF-8 or of bytes. One-shot `crypto.hash` where Node has it
 * (20.12+, 21.7+): about a quarter of the CPU of `createHash().update().digest()`, which builds
 * a Hash object per call. Same bytes out.
 *
 * @example
 * sha256Hex(new Uint8Array([0xff])); // the bytes themselves, never decoded
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
