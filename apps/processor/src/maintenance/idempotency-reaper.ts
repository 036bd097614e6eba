import { reapExpiredKeys } from '@once/idempotency/drizzle';
import type { ProcessorDatabase } from '../db/client.ts';

/**
 * Deletes idempotency keys past their retention (`PROCESSOR_IDEMPOTENCY_RETENTION_MS`,
 * 24 h by default) every `intervalMs` (`PROCESSOR_IDEMPOTENCY_REAP_INTERVAL_MS`). Retention itself
 * does not depend on this (an expired key is treated as new when reused); reaping only
 * keeps the table small.
 *
 * @example
 * const reaper = startIdempotencyReaper(db, console.log); // later: reaper.stop()
 */
export function startIdempotencyReaper(
  db: ProcessorDatabase,
  log: (line: string) => void,
  intervalMs = 10 * 60_000,
): { stop(): void } {
  const timer = setInterval(() => {
    reapExpiredKeys(db).then(
      ({ deleted }) => {
        if (deleted > 0) log(`idempotency: reaped ${deleted} expired keys`);
      },
      (error) => log(`idempotency: reaper failed: ${String(error)}`),
    );
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
