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
 * One pass and one string: it runs on every guarded request. Its output is the `canonicalize`
 * package's (the reference implementation by one of RFC 8785's authors, which fingerprints were
 * made with before) byte for byte, including its spellings of what JSON has no form for (a hole
 * in an array, a `toJSON` returning undefined), so a key stored before keeps its fingerprint; a
 * property test holds the two equal.
 */
export function canonicalJson(value: unknown): string | undefined {
  return canonical(value, 0, []);
}

/**
 * `value` canonicalised at `depth` below the input, inside the objects `ancestors` (a stack:
 * inputs nest a few levels, so a scan beats a Set). Undefined for what JSON.stringify answers
 * undefined (undefined, a `toJSON` returning it): the caller spells it.
 */
function canonical(value: unknown, depth: number, ancestors: object[]): string | undefined {
  switch (typeof value) {
    case 'string':
      return canonicalString(value);
    case 'number':
      if (!Number.isFinite(value)) throw invalidInput(`${value} is not a JSON number`);
      // ECMAScript's number spelling, which JCS adopts (-0 is 0): JSON.stringify's for a finite number.
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
  if (ancestors.includes(object)) throw invalidInput('it is cyclic');
  ancestors.push(object);
  const text =
    typeof (object as { toJSON?: unknown }).toJSON === 'function'
      ? canonical((object as { toJSON(): unknown }).toJSON(), depth + 1, ancestors)
      : Array.isArray(object)
        ? canonicalArray(object, depth + 1, ancestors)
        : canonicalObject(object, depth + 1, ancestors);
  ancestors.pop();
  return text;
}

function canonicalArray(array: unknown[], depth: number, ancestors: object[]): string {
  let text = '[';
  for (let i = 0; i < array.length; i++) {
    if (i > 0) text += ',';
    const item = array[i];
    // A hole stays empty (`[1,,3]`), as the reference's map-and-join spells it; undefined is null.
    if (item === undefined) text += i in array ? 'null' : '';
    else text += canonical(item, depth, ancestors) ?? '';
  }
  return `${text}]`;
}

function canonicalObject(object: object, depth: number, ancestors: object[]): string {
  const proto = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) {
    const name = (proto as { constructor?: { name?: string } }).constructor?.name ?? 'object';
    throw invalidInput(
      `a ${name} is not plain JSON data (pass getFingerprintInput with what identifies the request)`,
    );
  }
  const keys = sortedInPlace(Object.keys(object));
  let text = '{';
  for (const key of keys) {
    const item = (object as Record<string, unknown>)[key];
    if (item === undefined) continue;
    if (text.length > 1) text += ',';
    // A `toJSON` returning undefined spells "undefined" here, as in the reference.
    text += `${quotedKey(key)}:${canonical(item, depth, ancestors)}`;
  }
  return `${text}}`;
}

/**
 * `keys` in UTF-16 code unit order, which is what JCS sorts by and what `sort()` and `<` compare.
 * A request's objects have a few keys: sorted by insertion there, since `sort()` allocates a
 * work array for every object of every request; larger ones by `sort()`.
 */
function sortedInPlace(keys: string[]): string[] {
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    for (; j >= 0 && keys[j]! > key; j--) keys[j + 1] = keys[j]!;
    keys[j + 1] = key;
  }
  return keys;
}

/** Keys cached by `quotedKey`: up to this many, each up to `QUOTED_KEY_MAX_LENGTH` long. */
const QUOTED_KEYS_MAX = 1_024;
const QUOTED_KEY_MAX_LENGTH = 64;
const quotedKeys = new Map<string, string>();

/**
 * `canonicalString` of an object's key. A service's requests repeat the same few keys, so their
 * spelling is kept instead of made again for every object of every request. Keys come from
 * request bodies: the cache is bounded in entries and length, and once full it only stops adding.
 */
function quotedKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = canonicalString(key);
    if (key.length <= QUOTED_KEY_MAX_LENGTH && quotedKeys.size < QUOTED_KEYS_MAX)
      quotedKeys.set(key, quoted);
  }
  return quoted;
}

/**
 * JSON.stringify's string (JCS escapes exactly as ECMAScript does), refusing a lone surrogate:
 * JSON.stringify spells one as a `\u` escape, so only a string whose text has one is scanned.
 */
function canonicalString(value: string): string {
  const text = JSON.stringify(value);
  if (text.includes('\\u') && hasLoneSurrogate(value))
    throw invalidInput('a string holds a lone surrogate');
  return text;
}

function hasLoneSurrogate(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code >= 0xdc00 && code <= 0xdfff) return true;
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true;
      i++;
    }
  }
  return false;
}

function invalidInput(reason: string): IdempotencyError {
  return new IdempotencyError('idempotency_input_invalid', {
    message: `The request input cannot be fingerprinted: ${reason}`,
  });
}
