import type { Database } from '@once/db';
import { reapExpiredKeys, sweepExpiredLeases } from '@once/idempotency/drizzle';
import type { Log } from './logger.ts';
import { type PeriodicTask, startPeriodicTask } from './periodic-task.ts';
import { withDatabaseRetry } from './transient-database-error.ts';

/**
 * The idempotency-key lease sweeper: keys whose request died mid-flight are released (no
 * phase committed: the client's retry may run again) or marked `unknown`, so a retry is
 * not answered 409 forever. Outbox jobs need no sweeper of their own: the claim query
 * takes over expired job leases.
 *
 * @example
 * const sweeper = startIdempotencyLeaseSweeper(db, 5_000, log);
 */
export function startIdempotencyLeaseSweeper(
  db: Database,
  intervalMs: number,
  log: Log,
  onDatabaseHang?: () => void,
): PeriodicTask {
  return startPeriodicTask(
    'key_sweeper',
    intervalMs,
    async () => {
      const swept = await withDatabaseRetry(() => sweepExpiredLeases(db), {
        log,
        what: 'key_sweeper',
        attempts: 3,
        onHang: onDatabaseHang,
      });
      if (swept.released + swept.markedUnknown > 0) log('key_sweeper.swept', { ...swept });
    },
    log,
  );
}

/**
 * The idempotency-key reaper: deletes completed/released keys past their retention (24 h
 * by default) in small batches, so the table stays the size of a day of traffic.
 *
 * @example
 * const reaper = startIdempotencyKeyReaper(db, 60_000, log);
 */
export function startIdempotencyKeyReaper(
  db: Database,
  intervalMs: number,
  log: Log,
  onDatabaseHang?: () => void,
): PeriodicTask {
  return startPeriodicTask(
    'key_reaper',
    intervalMs,
    async () => {
      const reaped = await withDatabaseRetry(() => reapExpiredKeys(db), {
        log,
        what: 'key_reaper',
        attempts: 3,
        onHang: onDatabaseHang,
      });
      if (reaped.deleted > 0) log('key_reaper.reaped', { ...reaped });
    },
    log,
  );
}
