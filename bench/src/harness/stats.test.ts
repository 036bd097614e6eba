import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { percentile, summarize } from './stats.ts';

describe('percentile (nearest rank)', () => {
  it('picks the nearest-rank element', () => {
    const sorted = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(percentile(sorted, 50)).toBe(5);
    expect(percentile(sorted, 99)).toBe(10);
    expect(percentile(sorted, 10)).toBe(1);
    expect(percentile([], 50)).toBeNaN();
  });

  it('always returns a sample, monotone in p', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ noNaN: true, min: 0, max: 1e6 }), { minLength: 1 }),
        (values) => {
          const sorted = [...values].sort((a, b) => a - b);
          const p50 = percentile(sorted, 50);
          const p99 = percentile(sorted, 99);
          expect(sorted).toContain(p50);
          expect(p99).toBeGreaterThanOrEqual(p50);
          expect(p99).toBeLessThanOrEqual(sorted.at(-1)!);
        },
      ),
    );
  });
});

describe('summarize', () => {
  it('does not depend on sample order', () => {
    expect(summarize([3, 1, 2])).toEqual(summarize([1, 2, 3]));
    expect(summarize([3, 1, 2])).toMatchObject({ count: 3, median: 2, max: 3 });
  });
});
