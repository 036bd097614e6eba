import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  type LoadResult,
  mergeResults,
  pairedCpuDifference,
  pairedRatio,
  runInterleaved,
} from './load.ts';

/** A measured round: `throughput` responses per second for one second. */
const round = (throughput: number): LoadResult => ({
  durationSec: 1,
  throughput,
  latency: { count: 0, median: 0, p90: 0, p99: 0, max: 0 },
  statuses: {},
  errors: 0,
  timeouts: 0,
  replayed: 0,
  samples: Array.from({ length: throughput }, () => 1),
});

describe('pairedRatio', () => {
  it('pairs round i with round i: drift that hits both sides of a pair cancels out', () => {
    // The machine slows down through the run; the variant is 0.9x of its twin in every round.
    const twin = mergeResults([round(1000), round(800), round(500)]);
    const variant = mergeResults([round(900), round(720), round(450)]);
    expect(pairedRatio(variant, twin)).toEqual({
      median: expect.closeTo(0.9, 6),
      min: expect.closeTo(0.9, 6),
      max: expect.closeTo(0.9, 6),
      rounds: 3,
      whole: expect.closeTo(0.9, 6),
    });
  });

  it('one disturbed round moves the spread, not the median', () => {
    const twin = mergeResults([1000, 1000, 1000, 1000, 1000].map(round));
    const variant = mergeResults([950, 940, 300, 960, 950].map(round));
    const ratio = pairedRatio(variant, twin);
    expect(ratio.median).toBeCloseTo(0.95, 6);
    expect([ratio.min, ratio.max]).toEqual([0.3, 0.96]);
    // The ratio of whole-run totals lets the one bad round pull the answer down.
    expect(ratio.whole).toBeCloseTo(0.82, 6);
  });

  it('without rounds (a single run) it is the plain ratio of throughputs', () => {
    expect(pairedRatio(round(450), round(500))).toEqual({
      median: 0.9,
      min: 0.9,
      max: 0.9,
      rounds: 1,
      whole: 0.9,
    });
  });
});

describe('pairedCpuDifference', () => {
  /** A round of 1000 responses that cost the server `msPerResponse` of CPU each. */
  const cpuRound = (msPerResponse: number): LoadResult => ({
    ...round(1000),
    serverCpuMs: msPerResponse * 1000,
  });

  it('is the median of the per-round differences, in microseconds', () => {
    const floor = mergeResults([1.0, 1.2, 0.9].map(cpuRound));
    const guarded = mergeResults([1.03, 1.5, 0.95].map(cpuRound));
    const above = pairedCpuDifference(guarded, floor)!;
    expect(above.median).toBeCloseTo(50, 6);
    expect([above.min, above.max].map((us) => Math.round(us))).toEqual([30, 300]);
    expect(above.rounds).toBe(3);
  });

  it('is undefined when the server CPU was not measured', () => {
    const unmeasured = mergeResults([round(1000), round(1000)]);
    expect(pairedCpuDifference(unmeasured, unmeasured)).toBeUndefined();
  });
});

describe('runInterleaved', () => {
  it('runs every other round in reverse order, so a drift favours no variant', async () => {
    const seen: string[] = [];
    const server = createServer((request, response) => {
      seen.push(request.url!.slice(1));
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      // One request per round (`amount`) from one connection: the server sees the order.
      const variant = (name: string) => ({
        name,
        load: {
          url,
          path: `/${name}`,
          method: 'GET' as const,
          connections: 1,
          durationSec: 1,
          amount: 1,
        },
      });
      // Two rounds (autocannon takes about a second per run, whatever its amount).
      const results = await runInterleaved(['a', 'b', 'c'].map(variant), 2);
      expect(seen.join(' ')).toBe('a b c c b a');
      expect(results.get('b')!.roundThroughputs).toHaveLength(2);
    } finally {
      server.close();
    }
  });
});
