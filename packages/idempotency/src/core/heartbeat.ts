import type { HolderWriteResult } from './types.ts';

interface Beat {
  dueAt: number;
  intervalMs: number;
  renew: () => Promise<HolderWriteResult | 'finished'>;
  onLost: () => void;
  inFlight: Promise<void> | undefined;
  stopped: boolean;
}

/**
 * Renews the leases of all running handlers of one engine from ONE timer, so a request costs a
 * Set insert and delete instead of its own `setInterval` (most handlers finish long before
 * their first renewal is due). The timer is armed for the earliest due renewal only while some
 * handler runs, and unref'd so it never keeps a process alive.
 *
 * Per lease: one renewal at a time; a lost lease stops it and calls `onLost`; a failing store
 * is tolerated (the next tick tries again: the lease still has time left).
 */
export function createHeartbeatScheduler() {
  const beats = new Set<Beat>();
  let timer: NodeJS.Timeout | undefined;
  let armedFor = Number.POSITIVE_INFINITY;

  function arm() {
    let earliest = Number.POSITIVE_INFINITY;
    for (const beat of beats) if (!beat.inFlight && beat.dueAt < earliest) earliest = beat.dueAt;
    if (earliest === armedFor) return;
    if (timer) clearTimeout(timer);
    timer = undefined;
    armedFor = earliest;
    if (earliest === Number.POSITIVE_INFINITY) return;
    timer = setTimeout(tick, Math.max(0, earliest - performance.now()));
    timer.unref();
  }

  function tick() {
    timer = undefined;
    armedFor = Number.POSITIVE_INFINITY;
    const now = performance.now();
    for (const beat of beats) {
      if (beat.inFlight || beat.dueAt > now) continue;
      beat.inFlight = beat
        .renew()
        .then((result) => {
          if (beat.stopped) return;
          if (result === 'lost') {
            stop(beat);
            beat.onLost();
          } else if (result === 'finished') {
            stop(beat);
          }
        })
        .catch(() => {})
        .finally(() => {
          beat.inFlight = undefined;
          beat.dueAt = performance.now() + beat.intervalMs;
          arm();
        });
    }
    arm();
  }

  function stop(beat: Beat) {
    beat.stopped = true;
    beats.delete(beat);
  }

  return {
    start(options: {
      intervalMs: number;
      renew: () => Promise<HolderWriteResult | 'finished'>;
      onLost: () => void;
    }): { stop(): Promise<void> } {
      const beat: Beat = {
        intervalMs: options.intervalMs,
        renew: options.renew,
        onLost: options.onLost,
        dueAt: performance.now() + options.intervalMs,
        inFlight: undefined,
        stopped: false,
      };
      beats.add(beat);
      // Beats of one operation share an interval, so a new one is rarely the earliest: no re-arm.
      if (beat.dueAt < armedFor) arm();
      return {
        async stop() {
          stop(beat);
          await beat.inFlight;
        },
      };
    },
  };
}
