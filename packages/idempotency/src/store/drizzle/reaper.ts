import { sql } from 'drizzle-orm';
import type { IdempotencyEvent } from '../../core/types.ts';
import { type AnyPgDatabase, rowsOf } from './drizzle-types.ts';
import { reapable, tombstoneDue, toTombstone } from './key-state-machine.ts';

/** Options of `reapExpiredKeys`. */
export interface ReapOptions {
  /** Rows deleted per statement (each its own short transaction). Default 500. */
  batchSize?: number;
  /** Upper bound of batches per call, so one call never runs unbounded. Default 100. */
  maxBatches?: number;
  onEvent?: (event: IdempotencyEvent) => void;
}

/**
 * Delete expired terminal keys (`completed`, `released`, tombstones) in small batches, and turn
 * completed keys of operations with a `tombstoneMs` into their tombstone (`expired`: the answer
 * dropped, fingerprint and status kept until the window ends) instead. Each batch picks rows
 * through the partial index `idempotency_keys_reapable_idx` with `FOR UPDATE SKIP LOCKED`, so
 * a key a request is reserving right now is skipped, never waited on. `unknown` keys are never
 * reaped: only reconciliation (`resolveUnknownKey`) moves them on. Also drops rate-limit rows
 * whose theoretical arrival time is past (they limit nothing). Safe to run from several workers
 * at once.
 */
export async function reapExpiredKeys(
  db: AnyPgDatabase,
  options: ReapOptions = {},
): Promise<{ deleted: number; tombstoned: number; batches: number }> {
  const batchSize = options.batchSize ?? 500;
  const maxBatches = options.maxBatches ?? 100;
  const counts = { deleted: 0, tombstoned: 0, batches: 0 };
  // A tombstone is a statement of its own: what a retry is answered does not depend on it (the
  // store reads a completed key past its retention as `expired` already), only the row's size.
  for (const [count, due, change] of [
    [
      'tombstoned',
      tombstoneDue('k'),
      sql`update idempotency_keys k set ${toTombstone('k')} from due d`,
    ],
    ['deleted', reapable('k'), sql`delete from idempotency_keys k using due d`],
  ] as const) {
    while (counts.batches < maxBatches) {
      const rows = rowsOf(
        await db.execute(sql`
          with due as (
            select k.tenant_id, k.operation, k.key from idempotency_keys k
            where ${due}
            order by k.expires_at
            limit ${batchSize}
            for update skip locked)
          ${change}
          where k.tenant_id = d.tenant_id and k.operation = d.operation and k.key = d.key
          returning 1`),
      );
      counts.batches++;
      counts[count] += rows.length;
      if (rows.length < batchSize) break;
    }
  }
  await db.execute(sql`delete from idempotency_rate_limits where theoretical_arrival < now()`);
  if (counts.deleted > 0) options.onEvent?.({ type: 'reaped', count: counts.deleted });
  return counts;
}
