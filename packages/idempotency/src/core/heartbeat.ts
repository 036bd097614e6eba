import type { HolderWriteResult } from './types.ts';

/**
 * Renew a lease on an interval while a handler runs, so long handlers keep their key without
 * any code of their own. One renewal at a time; a lost lease stops it and calls `onLost`.
 * A failing store is tolerated (the next tick tries again): the lease still has time left.
 */
export function startHeartbeat(options: {
  intervalMs: number;
  renew: () => Promise<HolderWriteResult | 'finished'>;
  onLost: () => void;
}): { stop(): Promise<void> } {
  let inFlight: Promise<void> | undefined;
  let stopped = false;
  const timer = setInterval(() => {
    if (inFlight || stopped) return;
    inFlight = options
      .renew()
      .then((result) => {
        if (stopped) return;
        if (result === 'lost') {
          stopped = true;
          clearInterval(timer);
          options.onLost();
        } else if (result === 'finished') {
          stopped = true;
          clearInterval(timer);
        }
      })
      .catch(() => {})
      .finally(() => {
        inFlight = undefined;
      });
  }, options.intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await inFlight;
    },
  };
}
