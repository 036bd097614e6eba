import { reapExpiredKeys } from '@once/idempotency/drizzle';
import type { ProcessorDatabase } from '../db/client.ts';
import { type PeriodicSweep, startPeriodicSweep } from './periodic-sweep.ts';

/**
 * Deletes idempotency keys past their retention (`PROCESSOR_IDEMPOTENCY_RETENTION_MS`,
 * 24 h by default) every `intervalMs` (`PROCESSOR_IDEMPOTENCY_REAP_INTERVAL_MS`). Retention itself
 * does not depend on this (an expired key is treated as new when reused); reaping only
 * keeps the table small.
 */
export function startIdempotencyReaper(
  db: ProcessorDatabase,
  log: (line: string) => void,
  intervalMs = 10 * 60_000,
): PeriodicSweep {
  return startPeriodicSweep({
    name: 'idempotency',
    intervalMs,
    log,
    pass: () => reapExpiredKeys(db),
    describe: ({ deleted }) => (deleted > 0 ? `reaped ${deleted} expired keys` : undefined),
  });
}
