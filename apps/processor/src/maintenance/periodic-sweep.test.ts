import { afterEach, describe, expect, it, vi } from 'vitest';
import { startPeriodicSweep } from './periodic-sweep.ts';

describe('startPeriodicSweep', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs one pass at a time: a slow pass is never overlapped by the next', async () => {
    vi.useFakeTimers();
    let running = 0;
    let most = 0;
    let passes = 0;
    const sweep = startPeriodicSweep({
      name: 'test',
      intervalMs: 100,
      log: () => {},
      pass: async () => {
        running += 1;
        most = Math.max(most, running);
        passes += 1;
        await new Promise((resolve) => setTimeout(resolve, 350));
        running -= 1;
        return 0;
      },
      describe: () => undefined,
    });
    await vi.advanceTimersByTimeAsync(2_000);
    sweep.stop();
    expect(most).toBe(1);
    // Each cycle is the 100 ms wait plus the 350 ms pass.
    expect(passes).toBe(5);
  });

  it('logs what a pass did, nothing for an idle pass, and goes on after a failed one', async () => {
    vi.useFakeTimers();
    const lines: string[] = [];
    const answers = [2, 0, new Error('database unreachable'), 1];
    const sweep = startPeriodicSweep({
      name: 'refunds',
      intervalMs: 10,
      log: (line) => lines.push(line),
      pass: async () => {
        const next = answers.shift() ?? 0;
        if (next instanceof Error) throw next;
        return next;
      },
      describe: (n) => (n > 0 ? `${n} settled` : undefined),
    });
    await vi.advanceTimersByTimeAsync(100);
    sweep.stop();
    expect(lines).toEqual([
      'refunds: 2 settled',
      'refunds: pass failed: Error: database unreachable',
      'refunds: 1 settled',
    ]);
  });

  it('stops: no pass after stop()', async () => {
    vi.useFakeTimers();
    let passes = 0;
    const sweep = startPeriodicSweep({
      name: 'test',
      intervalMs: 10,
      log: () => {},
      pass: async () => {
        passes += 1;
      },
      describe: () => undefined,
    });
    await vi.advanceTimersByTimeAsync(35);
    sweep.stop();
    const seen = passes;
    await vi.advanceTimersByTimeAsync(100);
    expect(passes).toBe(seen);
  });
});
