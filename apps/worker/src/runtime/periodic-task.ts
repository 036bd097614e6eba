import type { Log } from './logger.ts';

export interface PeriodicTask {
  /** Stops scheduling; resolves when the run in progress (if any) has finished. */
  stop(): Promise<void>;
}

/**
 * Runs `run` now and then every `intervalMs` after each run ends (never two at once). A
 * failed run is logged and the next one happens on schedule: a database outage must not
 * end the reaper or the reconciler.
 */
export function startPeriodicTask(
  name: string,
  intervalMs: number,
  run: () => Promise<unknown>,
  log: Log,
): PeriodicTask {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();

  const tick = () => {
    current = run()
      .then(
        () => {},
        (error: unknown) => log(`${name}.failed`, { error: String(error) }),
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  tick();

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}
