import { describe, expect, it } from 'vitest';
import { newOperatorCode } from './operator-code.ts';

describe('the demo operator code', () => {
  it('is three groups of five from an alphabet without look-alikes, new each time', () => {
    const codes = Array.from({ length: 200 }, newOperatorCode);
    for (const code of codes) {
      expect(code).toMatch(/^[2-9a-hjkmnp-z]{5}-[2-9a-hjkmnp-z]{5}-[2-9a-hjkmnp-z]{5}$/);
    }
    expect(new Set(codes).size).toBe(codes.length);
    // Every character of the alphabet turns up: the draw is not stuck on a few.
    expect(new Set(codes.join('').replaceAll('-', '')).size).toBe(31);
  });
});
