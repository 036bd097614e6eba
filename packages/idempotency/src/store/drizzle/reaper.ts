import { sql } from 'drizzle-orm';
import type { IdempotencyEvent } from '../../core/types.ts';
import { type AnyPgDatabase, rowsOf } from './drizzle-types.ts';
import { reapable } from './key-state-machine.ts';

/** Options of `reapExpiredKeys`. */
export interface ReapOptions {
  /** Rows deleted per statement (each its own short transaction). Default 500. */
  batchSize?: number;
  /** Upper bound of batches per call, so one call never runs unbounded. Default 100. */
  maxBatches?: number;
  onEvent?: (event: IdempotencyEvent) => void;
}

/**
 * Delete expired terminal keys (`completed`, `released`) in small batches. Each batch picks rows
 * through the partial index `idempotency_keys_reapable_idx` with `FOR UPDATE SKIP LOCKED`, so
 * a key a request is reserving right now is skipped, never waited on. `unknown` keys are never
 * reaped: only reconciliation (`resolveUnknownKey`) moves them on. Also drops ended rate-limit
 * windows. Safe to run from several workers at once.
 */
export async function reapExpiredKeys(
  db: AnyPgDatabase,
  options: ReapOptions = {},
): Promise<{ deleted: number; batches: number }> {
  const batchSize = options.batchSize ?? 500;
  const maxBatches = options.maxBatches ?? 100;
  let deleted = 0;
  let batches = 0;
  while (batches < maxBatches) {
    const rows = rowsOf(
      await db.execute(sql`
        with doomed as (
          select k.tenant_id, k.operation, k.key from idempotency_keys k
          where ${reapable('k')}
          order by k.expires_at
          limit ${batchSize}
          for update skip locked)
        delete from idempotency_keys k using doomed d
        where k.tenant_id = d.tenant_id and k.operation = d.operation and k.key = d.key
        returning 1`),
    );
    batches++;
    deleted += rows.length;
    if (rows.length < batchSize) break;
  }
  await db.execute(sql`delete from idempotency_rate_limits where window_end < now()`);
  if (deleted > 0) options.onEvent?.({ type: 'reaped', count: deleted });
  return { deleted, batches };
}
