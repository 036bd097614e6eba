import { describe, expect, it } from 'vitest';
import { labelLines } from './timeline-diagram.tsx';

describe('labelLines', () => {
  it('breaks a long label between words into two lines that fit', () => {
    const lines = labelLines('confirm: failed: connection dropped', 20);
    expect(lines).toEqual(['confirm: failed:', 'connection dropped']);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(20);
  });
  it('ends what still does not fit in an ellipsis, never past the room it has', () => {
    const lines = labelLines('reconciler search: found charged → succeeded', 12);
    expect(lines).toHaveLength(2);
    expect(lines[1]?.endsWith('…')).toBe(true);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(12);
  });
});
