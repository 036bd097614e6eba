import { describe, expect, it } from 'vitest';
import type { ScenarioResult } from './result-types.ts';
import { ratiosOf, renderTable } from './table.ts';

const latency = (median: number, p99: number) => ({ count: 10, median, p90: p99, p99, max: p99 });
const result: ScenarioResult = {
  name: 'x',
  title: 'X',
  settings: {},
  goals: [],
  notes: [],
  rows: [
    { name: 'base', baseline: true, throughput: 100, latency: latency(10, 40) },
    { name: 'guarded', throughput: 80, latency: latency(20, 40) },
    { name: 'twin', throughput: 50, latency: latency(5, 10) },
    {
      name: 'other',
      comparedTo: 'twin',
      throughput: 25,
      latency: latency(10, 10),
      extra: { dup: 0 },
    },
  ],
};

describe('ratios and tables', () => {
  it('compares with the baseline row, or with the named row', () => {
    expect(ratiosOf(result, result.rows[1]!)).toEqual({ throughput: 0.8, median: 2, p99: 1 });
    expect(ratiosOf(result, result.rows[3]!)).toEqual({ throughput: 0.5, median: 2, p99: 1 });
    expect(ratiosOf(result, result.rows[0]!)).toEqual({});
  });

  it('renders one Markdown row per variant with extra columns', () => {
    const lines = renderTable(result).split('\n');
    expect(lines).toHaveLength(2 + result.rows.length);
    expect(lines[0]).toContain('| dup |');
    expect(lines[2]).toContain('base (baseline)');
    expect(lines[3]).toContain('| 0.8x |');
    expect(lines[5]).toContain('other (vs twin)');
  });

  it('leaves out the columns no row fills (a scenario that counts, not times)', () => {
    const counts = {
      ...result,
      rows: [{ name: 'a', baseline: true, extra: { 'round trips': 4 } }],
    };
    expect(renderTable(counts).split('\n')).toEqual([
      '| variant | round trips |',
      '|---|---|',
      '| a (baseline) | 4 |',
    ]);
  });

  it('says why a scenario was skipped', () => {
    expect(renderTable({ ...result, skipped: 'no redis' })).toBe('_skipped: no redis_');
  });
});
