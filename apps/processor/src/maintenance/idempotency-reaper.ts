import { reapExpiredKeys } from '@once/idempotency/drizzle';
import type { ProcessorDatabase } from '../db/client.ts';
import { type PeriodicSweep, startPeriodicSweep } from './periodic-sweep.ts';

/** Deletes keys past their retention; only keeps the table small (an expired key is new anyway). */
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
