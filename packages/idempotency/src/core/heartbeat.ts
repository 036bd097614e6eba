import type { HolderWriteResult } from './types.ts';

/**
 * The heartbeats of one engine's running handlers. `start` renews one attempt's lease every
 * `intervalMs` (counted from the end of the last renewal) until `stop`: one renewal at a time;
 * a lost lease stops it and calls `onLost`; a failing store is tolerated (the next beat tries
 * again: the lease still has time left). Timers are unref'd so they never keep a process alive.
 */
export function createHeartbeatScheduler() {
  return {
    start(options: {
      intervalMs: number;
      renew: () => Promise<HolderWriteResult | 'finished'>;
      onLost: () => void;
    }): { stop(): Promise<void> } {
      let stopped = false;
      let inFlight: Promise<void> | undefined;
      let timer: NodeJS.Timeout | undefined;
      const schedule = () => {
        timer = setTimeout(beat, options.intervalMs);
        timer.unref();
      };
      const beat = () => {
        inFlight = options
          .renew()
          .then((result) => {
            if (stopped) return;
            if (result === 'ok') return schedule();
            // 'finished' (the key completed) needs no more renewals; 'lost' tells the holder.
            stopped = true;
            if (result === 'lost') options.onLost();
          })
          .catch(() => {
            if (!stopped) schedule();
          });
      };
      schedule();
      return {
        async stop() {
          stopped = true;
          clearTimeout(timer);
          await inFlight;
        },
      };
    },
  };
}
