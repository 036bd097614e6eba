import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeFingerprint } from './fingerprint.ts';

/** JSON values without lone surrogates (JCS rejects those) and without -0 (JSON spells it 0). */
const json = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);

function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((v, i) => shuffleKeys(v, seed + i));
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    entries.sort(
      (a, b) =>
        ((a[0].length * 31 + seed) % 7) - ((b[0].length * 31 + seed) % 7) || (seed % 2 ? 1 : -1),
    );
    return Object.fromEntries(entries.map(([k, v]) => [k, shuffleKeys(v, seed + 1)]));
  }
  return value;
}

describe('computeFingerprint', () => {
  it('ignores key order, whitespace and number spelling', () => {
    const a = computeFingerprint(
      'checkout.pay',
      JSON.parse('{"b": [1.0, 2e0], "a": {"y": 1, "x": 10.50}}'),
    );
    const b = computeFingerprint('checkout.pay', JSON.parse('{"a":{"x":10.5,"y":1},"b":[1,2]}'));
    expect(a).toBe(b);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
  });

  it('includes the operation', () => {
    expect(computeFingerprint('a', { x: 1 })).not.toBe(computeFingerprint('b', { x: 1 }));
  });

  it('fuzz: re-serialised and key-shuffled JSON has the same fingerprint', () => {
    fc.assert(
      fc.property(json, fc.nat(), (value, seed) => {
        const respelled = JSON.parse(JSON.stringify(shuffleKeys(value, seed), null, seed % 4));
        expect(computeFingerprint('op', respelled)).toBe(computeFingerprint('op', value));
      }),
      { numRuns: 3000 },
    );
  });

  it('fuzz: semantically different inputs have different fingerprints', () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        fc.pre(!deepEqual(a, b));
        expect(computeFingerprint('op', a)).not.toBe(computeFingerprint('op', b));
      }),
      { numRuns: 3000 },
    );
  });
});

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ak = Object.keys(a as object);
  const bk = Object.keys(b as object);
  if (ak.length !== bk.length) return false;
  return ak.every(
    (k) =>
      Object.hasOwn(b as object, k) &&
      deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}
