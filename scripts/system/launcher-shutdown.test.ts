import { describe, expect, it } from 'vitest';
import { createLauncherShutdown } from './launcher-shutdown.ts';

/** A launcher whose stop is under the test's control; what it printed and how it exited. */
function launcher(stop: () => Promise<void>) {
  const lines: string[] = [];
  const exits: number[] = [];
  const shutdown = createLauncherShutdown({
    stop,
    log: (line) => lines.push(line.trim()),
    exit: (code) => exits.push(code),
  });
  return { shutdown, lines, exits };
}

describe('the launcher shutdown always finishes its report', () => {
  it('a second Ctrl-C and a part exiting while the stop runs wait for it: one report, one exit', async () => {
    let finishStop!: () => void;
    let stops = 0;
    const demo = launcher(() => {
      stops++;
      return new Promise<void>((resolve) => {
        finishStop = resolve;
      });
    });
    const first = demo.shutdown(0, 'Ctrl-C');
    // The same Ctrl-C relayed by a wrapper, then a part that exits mid-stop.
    const second = demo.shutdown(0, 'Ctrl-C');
    const third = demo.shutdown(1, 'web exited with code 1');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(demo.exits).toEqual([]);
    finishStop();
    await Promise.all([first, second, third]);
    expect(demo.lines).toEqual(['stopping Once (Ctrl-C) ...', 'all processes stopped']);
    expect(demo.exits).toEqual([0]);
    expect(stops).toBe(1);
  });

  it('a stop that fails is told and exits 1, never an unhandled rejection', async () => {
    const demo = launcher(async () => {
      throw new Error('worker-1 did not stop');
    });
    await expect(demo.shutdown(0, 'SIGTERM')).resolves.toBeUndefined();
    expect(demo.lines).toEqual([
      'stopping Once (SIGTERM) ...',
      'stopping failed: worker-1 did not stop',
    ]);
    expect(demo.exits).toEqual([1]);
  });
});
