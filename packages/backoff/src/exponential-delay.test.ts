import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { equalJitterDelayMs, exponentialDelayMs } from './exponential-delay.ts';

describe('equalJitterDelayMs', () => {
  it('stays within [ceiling/2, ceiling] where ceiling = min(max, base * 2^(attempt-1))', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2_000 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        (attempt, baseMs, extra, draw) => {
          const maxMs = baseMs + extra;
          const ceiling = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
          const delay = equalJitterDelayMs(attempt, { baseMs, maxMs }, () => draw);
          expect(delay).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
          expect(delay).toBeLessThanOrEqual(Math.ceil(ceiling));
        },
      ),
    );
  });

  it('grows with the attempt until the cap', () => {
    const policy = { baseMs: 100, maxMs: 1_000 };
    const top = (attempt: number) => equalJitterDelayMs(attempt, policy, () => 0.999999);
    expect(top(1)).toBe(100);
    expect(top(2)).toBe(200);
    expect(top(3)).toBe(400);
    expect(top(5)).toBe(1_000);
    expect(top(50)).toBe(1_000);
  });

  it('spreads retries of workers that failed together (jitter)', () => {
    const delays = new Set(
      Array.from({ length: 50 }, () => equalJitterDelayMs(6, { baseMs: 500, maxMs: 30_000 })),
    );
    expect(delays.size).toBeGreaterThan(10);
  });
});

describe('exponentialDelayMs', () => {
  it('doubles from the base to the cap, without jitter', () => {
    const policy = { baseMs: 500, maxMs: 15_000 };
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => exponentialDelayMs(n, policy))).toEqual([
      500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000,
    ]);
    expect(exponentialDelayMs(Number.POSITIVE_INFINITY, policy)).toBe(15_000);
    expect(exponentialDelayMs(0, policy)).toBe(500);
  });
});
