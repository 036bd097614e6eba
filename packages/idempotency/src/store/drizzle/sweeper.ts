import { sql } from 'drizzle-orm';
import type { IdempotencyEvent, KeyState } from '../../core/types.ts';
import { type AnyPgDatabase, rowsOf } from './drizzle-types.ts';
import {
  leftForResume,
  NO_HOLDER,
  nothingCommitted,
  STATE,
  sweepable,
} from './key-state-machine.ts';

/** Options of `sweepExpiredLeases`. */
export interface SweepOptions {
  batchSize?: number;
  /** Only sweep leases expired for at least this long (give slow holders a margin). Default 0. */
  graceMs?: number;
  /** Upper bound of batches per call. Default 100. */
  maxBatches?: number;
  onEvent?: (event: IdempotencyEvent) => void;
}

/**
 * Settle keys whose holder died (lease expired, nobody retried):
 * - no phase committed -> `released` (the key can run again; nothing happened);
 * - a phase committed, policy `unknown` -> `unknown` (reconciliation decides);
 * - a phase committed, policy `resume` -> left alone: the next retry resumes it.
 * The old holder's token no longer matches, so its late writes are refused.
 */
export async function sweepExpiredLeases(
  db: AnyPgDatabase,
  options: SweepOptions = {},
): Promise<{ released: number; markedUnknown: number; leftForResume: number }> {
  const batchSize = options.batchSize ?? 500;
  const maxBatches = options.maxBatches ?? 100;
  const graceMs = options.graceMs ?? 0;
  let released = 0;
  let markedUnknown = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const rows = rowsOf<{ state: string }>(
      await db.execute(sql`
        with expired as (
          select k.tenant_id, k.operation, k.key, k.recovery_point from idempotency_keys k
          where ${sweepable('k', graceMs)}
          order by k.locked_until
          limit ${batchSize}
          for update skip locked)
        update idempotency_keys k set
          state = case when ${nothingCommitted('e')} then ${STATE.released} else ${STATE.unknown} end,
          ${NO_HOLDER}, updated_at = now()
        from expired e
        where k.tenant_id = e.tenant_id and k.operation = e.operation and k.key = e.key
        returning k.state`),
    );
    for (const row of rows) {
      if (row.state === ('released' satisfies KeyState)) released++;
      else markedUnknown++;
    }
    if (rows.length < batchSize) break;
  }
  const [left] = rowsOf<{ n: number | string }>(
    await db.execute(sql`select count(*)::int as n from idempotency_keys k
      where ${leftForResume('k', graceMs)}`),
  );
  if (released + markedUnknown > 0)
    options.onEvent?.({ type: 'swept', count: released + markedUnknown });
  return { released, markedUnknown, leftForResume: Number(left?.n ?? 0) };
}
