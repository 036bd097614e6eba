import type { IdempotencyEvent } from '../../core/types.ts';
import type { AnyPgDatabase } from './drizzle-types.ts';
import { explained } from './missing-tables.ts';
import { reapExpiredKeys } from './reaper.ts';
import { sweepExpiredLeases } from './sweeper.ts';

/** Options of `startKeyMaintenance`. */
export interface KeyMaintenanceOptions {
  /** How often dead holders' keys are settled (`sweepExpiredLeases`). Default 10 s. */
  sweepEveryMs?: number;
  /** How often expired finished keys are deleted (`reapExpiredKeys`). Default 60 s. */
  reapEveryMs?: number;
  /** Default: `console.error`. A failed round is retried at the next tick; missing tables say so in one line. */
  onError?: (error: unknown) => void;
  /**
   * Told of each round that settled or deleted rows (`swept`, `reaped` with their `count`):
   * pass the engine's observer (`createPrometheusObserver`, `createOpenTelemetryObserver`).
   */
  onEvent?: (event: IdempotencyEvent) => void;
}

/**
 * The sweeper and the reaper on timers, one round of each at once: part of setup, so a key
 * whose holder crashed is settled soon after its lease ends instead of waiting for a retry,
 * and finished keys do not pile up. Timers are `unref`ed (they never keep the process alive).
 * Safe in every process of a service (both skip rows another worker holds).
 *
 * @example
 * const maintenance = startKeyMaintenance(db); // ... on shutdown: maintenance.stop();
 */
export function startKeyMaintenance(
  db: AnyPgDatabase,
  options: KeyMaintenanceOptions = {},
): { stop(): void } {
  const onError = options.onError ?? ((error: unknown) => console.error(error));
  const { onEvent } = options;
  const every = (ms: number, job: () => Promise<unknown>) => {
    const run = () => void job().catch((error: unknown) => onError(explained(error)));
    run();
    const timer = setInterval(run, ms);
    timer.unref();
    return timer;
  };
  const timers = [
    every(options.sweepEveryMs ?? 10_000, () => sweepExpiredLeases(db, { onEvent })),
    every(options.reapEveryMs ?? 60_000, () => reapExpiredKeys(db, { onEvent })),
  ];
  return {
    stop: () => {
      for (const timer of timers) clearInterval(timer);
    },
  };
}
