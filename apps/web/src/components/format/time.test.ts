import { describe, expect, it } from 'vitest';
import { formatTimestamp } from './time.ts';

/** A local moment, so the test reads the same in every time zone. */
const local = (y: number, m: number, d: number, h: number, min: number, s: number) =>
  new Date(y, m - 1, d, h, min, s).toISOString();

describe('formatTimestamp', () => {
  const now = Date.parse(local(2026, 11, 25, 17, 0, 0));
  it('writes a moment of today as 24-hour time to the second', () => {
    expect(formatTimestamp(local(2026, 11, 25, 9, 5, 7), now)).toBe('09:05:07');
  });
  it('puts the day in front on another day, and the year in another year', () => {
    expect(formatTimestamp(local(2026, 11, 26, 16, 49, 46), now)).toBe('26 Nov 16:49:46');
    expect(formatTimestamp(local(2027, 1, 3, 9, 0, 0), now)).toBe('3 Jan 2027 09:00:00');
  });
  it('gives back what it cannot read', () => {
    expect(formatTimestamp('soon', now)).toBe('soon');
  });
});
