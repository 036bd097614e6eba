import { msInterval, runStatement, type SqlRunner, sqlLiteralList } from '@once/postgres/sql';
import { sql } from 'drizzle-orm';
import type { OutboxJobKind } from '../schema/outbox.ts';
import { type ClaimedJob, type ClaimedJobRow, toClaimedJob } from './claimed-job.ts';
import { isClaimable } from './job-sql.ts';

export interface ClaimOptions {
  /** Written to `locked_by`, for operators reading the table and the payment's timeline. */
  workerId: string;
  leaseMs: number;
  limit: number;
  /** The kinds this worker has a handler for; others stay for a worker that has one. */
  kinds: readonly OutboxJobKind[];
}

/** One claimed job, and whether it was taken over from a worker whose lease expired. */
export interface Claim {
  job: ClaimedJob;
  /** It was `running` with an expired lease (its worker died or stalled). */
  takeover: boolean;
  /** On a takeover, the worker that held the expired lease. */
  previousWorker: string | null;
}

/**
 * Claims up to `limit` claimable jobs (`isClaimable`) in one statement: `pending -> running`,
 * or `running -> running` with a new holder. Each claimed row gets a fresh `lock_token`, so
 * the worker that held an expired lease can no longer write to it; `attempts` counts claims.
 *
 * `FOR UPDATE SKIP LOCKED` lets many workers claim at once without waiting on each other,
 * and the row re-check after the lock (READ COMMITTED's EvalPlanQual) means two claimers
 * never both get a row. Run it in the transaction that records the claim's events.
 */
export async function claimDueJobs(db: SqlRunner, options: ClaimOptions): Promise<Claim[]> {
  const rows = await runStatement<
    ClaimedJobRow & { was_status: string; was_locked_by: string | null }
  >(
    db,
    sql`
    update outbox_jobs as job
    set status = 'running',
        attempts = job.attempts + 1,
        locked_by = ${options.workerId},
        lock_token = gen_random_uuid()::text,
        locked_until = now() + ${msInterval(options.leaseMs)},
        updated_at = now()
    from (
      select tenant_id, id, status as was_status, locked_by as was_locked_by
      from outbox_jobs as candidate
      where candidate.kind in ${sqlLiteralList(options.kinds)} and ${isClaimable('candidate')}
      order by run_after
      limit ${options.limit}
      for update skip locked
    ) as due
    where job.tenant_id = due.tenant_id and job.id = due.id
    returning job.tenant_id, job.id, job.kind, job.payment_id, job.downstream_key, job.payload,
              job.attempts, job.max_attempts, job.locked_by, job.lock_token, job.locked_until,
              due.was_status, due.was_locked_by`,
  );
  return rows.map((row) => ({
    job: toClaimedJob(row),
    takeover: row.was_status === 'running',
    previousWorker: row.was_status === 'running' ? row.was_locked_by : null,
  }));
}

/**
 * Milliseconds until the next job becomes claimable (a pending job's `run_after` or a
 * running job's lease end), or `null` when nothing is waiting. A dispatcher sleeps this long
 * at most, so backoffs and expired leases are picked up without waiting for a poll.
 */
export async function msUntilNextClaimable(db: SqlRunner): Promise<number | null> {
  // Clamped here, not with SQL's greatest(): that ignores a NULL and would answer 0 (claim
  // now, again and again) when nothing waits at all.
  const [row] = await runStatement<{ ms: number | null }>(
    db,
    sql`
    select (extract(epoch from (least(
      (select min(run_after) from outbox_jobs where status = 'pending'),
      (select min(locked_until) from outbox_jobs where status = 'running')
    ) - now())) * 1000)::float8 as ms`,
  );
  return row?.ms == null ? null : Math.max(0, row.ms);
}
