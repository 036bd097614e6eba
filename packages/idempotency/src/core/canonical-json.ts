import { IdempotencyError } from './errors.ts';

/**
 * How deep a fingerprint input may nest. Real request inputs are a few levels deep; the cap
 * makes a small body of nested arrays (`[[[[...]]]]`, 6 KB is 3,000 levels) a 400 instead of a
 * stack overflow.
 */
const MAX_DEPTH = 64;

/**
 * The RFC 8785 (JCS) canonical JSON of `value`, refusing in the same walk what is not plain
 * JSON data (`idempotency_input_invalid`, 400): BigInt, functions, symbols, NaN/Infinity,
 * strings with lone surrogates, cycles, nesting deeper than `MAX_DEPTH`, and objects JSON would
 * flatten to `{}` or to another value's form (Map, Set, typed arrays, Blob, class instances).
 * Objects with `toJSON` (Date) are taken as what it returns.
 *
 * Its output is the `canonicalize` package's (the reference implementation by one of RFC 8785's
 * authors, which fingerprints were made with before) byte for byte, including its spellings of
 * what JSON has no form for (a hole in an array, a `toJSON` returning undefined), so a key
 * stored before keeps its fingerprint; a property test holds the two equal.
 */
export function canonicalJson(value: unknown): string | undefined {
  return canonical(value, 0, new Set());
}

/**
 * `value` canonicalised at `depth` below the input, inside the objects `ancestors` (the path
 * from the input down, to refuse cycles). Undefined for what JSON.stringify answers undefined
 * (undefined, a `toJSON` returning it): the caller spells it.
 */
function canonical(value: unknown, depth: number, ancestors: Set<object>): string | undefined {
  switch (typeof value) {
    case 'string':
      return canonicalString(value);
    case 'number':
      if (!Number.isFinite(value)) throw invalidInput(`${value} is not a JSON number`);
      // ECMAScript's number spelling, which JCS adopts (-0 is 0).
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'undefined':
      return undefined;
    case 'bigint':
    case 'function':
    case 'symbol':
      throw invalidInput(`a ${typeof value} is not JSON`);
  }
  if (value === null) return 'null';
  const object = value as object;
  if (depth >= MAX_DEPTH) throw invalidInput(`it nests deeper than ${MAX_DEPTH} levels`);
  if (ancestors.has(object)) throw invalidInput('it is cyclic');
  ancestors.add(object);
  const text =
    typeof (object as { toJSON?: unknown }).toJSON === 'function'
      ? canonical((object as { toJSON(): unknown }).toJSON(), depth + 1, ancestors)
      : Array.isArray(object)
        ? canonicalArray(object, depth + 1, ancestors)
        : canonicalObject(object, depth + 1, ancestors);
  ancestors.delete(object);
  return text;
}

function canonicalArray(array: unknown[], depth: number, ancestors: Set<object>): string {
  const items: string[] = [];
  for (let i = 0; i < array.length; i++) {
    const item = array[i];
    // A hole stays empty (`[1,,3]`), as the reference's map-and-join spells it; undefined is null.
    if (item === undefined) items.push(i in array ? 'null' : '');
    else items.push(canonical(item, depth, ancestors) ?? '');
  }
  return `[${items.join(',')}]`;
}

function canonicalObject(object: object, depth: number, ancestors: Set<object>): string {
  const proto = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) {
    const name = (proto as { constructor?: { name?: string } }).constructor?.name ?? 'object';
    throw invalidInput(
      `a ${name} is not plain JSON data (pass getFingerprintInput with what identifies the request)`,
    );
  }
  const members: string[] = [];
  // `sort()` compares UTF-16 code units, which is the order JCS asks for.
  for (const key of Object.keys(object).sort()) {
    const item = (object as Record<string, unknown>)[key];
    if (item === undefined) continue;
    // A `toJSON` returning undefined spells "undefined" here, as in the reference.
    members.push(`${canonicalString(key)}:${canonical(item, depth, ancestors)}`);
  }
  return `{${members.join(',')}}`;
}

/** In a `u` regex a surrogate pair reads as one code point, so only a lone surrogate matches. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** JSON.stringify's string (JCS escapes exactly as ECMAScript does), refusing a lone surrogate. */
function canonicalString(value: string): string {
  if (LONE_SURROGATE.test(value)) throw invalidInput('a string holds a lone surrogate');
  return JSON.stringify(value);
}

function invalidInput(reason: string): IdempotencyError {
  return new IdempotencyError('idempotency_input_invalid', {
    message: `The request input cannot be fingerprinted: ${reason}`,
  });
}
