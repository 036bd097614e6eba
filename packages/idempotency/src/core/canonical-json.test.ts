import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.ts';
import { isIdempotencyError } from './errors.ts';
import { computeFingerprint } from './fingerprint.ts';

/**
 * `canonicalJson` must spell every input exactly as the `canonicalize` package did when keys
 * were fingerprinted with it: a stored key's retry after an upgrade must hash the same. The
 * package is the oracle here.
 */

/** Strings of any UTF-16 code units (lone surrogates too), any code points, and graphemes. */
const text = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
  fc.string({ unit: 'binary', maxLength: 4 }),
  fc
    .array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 6 })
    .map((codes) => String.fromCharCode(...codes)),
);
const number = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.constantFrom(-0, 0, 1e21, 1e-7, 5e-324, Number.MAX_VALUE, 0.1 + 0.2, 2 ** 53 + 2),
);
/** JSON values nested in any key order; objects with and without a prototype; undefined inside. */
const { value } = fc.letrec<{ value: unknown; array: unknown[]; object: object }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    number,
    text,
    tie('array'),
    tie('object'),
  ),
  array: fc.array(fc.oneof(tie('value'), fc.constant(undefined)), { maxLength: 5 }),
  object: fc.dictionary(text, fc.oneof(tie('value'), fc.constant(undefined)), { maxKeys: 5 }),
}));

/** The oracle's answer, or 'refused' where it throws (a lone surrogate). */
function reference(input: unknown): string | undefined | 'refused' {
  try {
    return canonicalize(input);
  } catch {
    return 'refused';
  }
}

function ours(input: unknown): string | undefined | 'refused' {
  try {
    return canonicalJson(input);
  } catch (error) {
    if (isIdempotencyError(error) && error.code === 'idempotency_input_invalid') return 'refused';
    throw error;
  }
}

describe('canonicalJson', () => {
  it('property: the same text as the canonicalize package for arbitrary JSON values', () => {
    fc.assert(
      fc.property(value, (input) => {
        expect(ours(input)).toBe(reference(input));
      }),
      { numRuns: 20_000 },
    );
  });

  it('property: the same key order as the package for objects of 10 to 40 keys (both sorts)', () => {
    fc.assert(
      fc.property(fc.dictionary(text, number, { minKeys: 10, maxKeys: 40 }), (input) => {
        expect(ours(input)).toBe(reference(input));
      }),
      { numRuns: 2_000 },
    );
  });

  it('property: the same fingerprint as before, sha256 of canonicalize({ operation, input })', () => {
    fc.assert(
      fc.property(text, value, (operation, input) => {
        const before = reference({ operation, input });
        fc.pre(before !== 'refused');
        expect(computeFingerprint(operation, input)).toBe(
          createHash('sha256').update(before!).digest('hex'),
        );
      }),
      { numRuns: 5_000 },
    );
  });

  it('spells what JSON has no form for as the package does', () => {
    const date = new Date(Date.UTC(2026, 0, 2));
    const nothing = { toJSON: () => undefined };
    // biome-ignore lint/suspicious/noSparseArray: a hole is the case under test
    const holes = [1, , 3];
    const cases: unknown[] = [
      holes,
      [undefined, nothing, 2],
      { a: undefined, b: nothing, c: date },
      { nested: { toJSON: () => ({ z: 1, a: [date] }) } },
      Object.assign(Object.create(null), { b: 1, a: -0 }),
      { '\u00e9': 1, e: 2, '\ud83d\ude00': 3, '\uff61': 4, '10': 5, '9': 6 },
      '\u2028\u2029\u0000\u001f"\\',
    ];
    for (const input of cases) expect(ours(input)).toBe(reference(input));
  });

  it('refuses what is not plain JSON data, as before', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const cyclicThroughToJSON = { toJSON: () => ({ again: cyclicThroughToJSON }) };
    let deep: unknown = 1;
    for (let i = 0; i < 65; i++) deep = [deep];
    for (const input of [
      10n,
      () => 1,
      Symbol('s'),
      Number.NaN,
      Number.POSITIVE_INFINITY,
      { a: [Number.NEGATIVE_INFINITY] },
      [Symbol('s')],
      { f: () => 1 },
      cyclic,
      cyclicThroughToJSON,
      deep,
      new Map([['a', 1]]),
      new Set([1]),
      new Uint8Array([1]),
      new (class Money {})(),
      'lone \ud800 surrogate',
      { '\udc00': 'a lone surrogate in a key' },
    ])
      expect(ours(input)).toBe('refused');
    // 64 levels are allowed, 65 are not (the cap counts `toJSON` hops as levels too).
    let allowed: unknown = 1;
    for (let i = 0; i < 64; i++) allowed = [allowed];
    expect(ours(allowed)).toBe(reference(allowed));
  });
});
