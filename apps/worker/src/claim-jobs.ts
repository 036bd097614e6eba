import { recordPaymentEvents, workerActor } from '@once/db/payment-events';
import { msInterval } from './ms-interval.ts';
import { type ClaimedJob, type ClaimedJobRow, toClaimedJob } from './outbox-job.ts';
import type { Queryable } from './queryable.ts';

export interface ClaimOptions {
  /** Written to `locked_by`, for operators reading the table. */
  workerId: string;
  leaseMs: number;
  limit: number;
}

/**
 * Claims up to `limit` due charge jobs in one statement: pending jobs whose `run_after` has
 * come, and running jobs whose lease expired (their worker died or stalled; this IS the
 * lease sweeper for outbox jobs). Each claimed row gets a fresh `lock_token`, so the
 * worker that held an expired lease can no longer finish it; `attempts` counts claims.
 *
 * `FOR UPDATE SKIP LOCKED` lets many workers claim at once without waiting on each
 * other, and the row re-check after the lock (READ COMMITTED's EvalPlanQual) means two
 * claimers never both get a row. Times come from the database clock only, so workers
 * with skewed clocks agree on who holds a lease.
 *
 * @example
 * const jobs = await claimJobs(sql, { workerId: 'w1', leaseMs: 30_000, limit: 4 });
 */
export async function claimJobs(sql: Queryable, options: ClaimOptions): Promise<ClaimedJob[]> {
  // The claim and its `job.claimed` events commit together: a claim nobody can see in the
  // timeline never happened, and a rolled-back claim leaves no event.
  if ('begin' in sql) return sql.begin((tx) => claimInTransaction(tx, options));
  return claimInTransaction(sql, options);
}

async function claimInTransaction(sql: Queryable, options: ClaimOptions): Promise<ClaimedJob[]> {
  const rows = await sql<(ClaimedJobRow & { was_status: string; was_locked_by: string | null })[]>`
    update outbox_jobs as job
    set status = 'running',
        attempts = job.attempts + 1,
        locked_by = ${options.workerId},
        lock_token = gen_random_uuid()::text,
        locked_until = now() + ${msInterval(sql, options.leaseMs)},
        updated_at = now()
    from (
      select tenant_id, id, status as was_status, locked_by as was_locked_by
      from outbox_jobs
      where kind = 'charge_payment'
        and ((status = 'pending' and run_after <= now())
          or (status = 'running' and locked_until < now()))
      order by run_after
      limit ${options.limit}
      for update skip locked
    ) as due
    where job.tenant_id = due.tenant_id and job.id = due.id
    returning job.tenant_id, job.id, job.payment_id, job.downstream_key, job.payload,
              job.attempts, job.max_attempts, job.locked_by, job.lock_token, job.locked_until,
              due.was_status, due.was_locked_by`;
  await recordPaymentEvents(
    sql,
    rows.map((row) => ({
      tenantId: row.tenant_id,
      paymentId: row.payment_id,
      actor: workerActor(options.workerId),
      kind: 'job.claimed' as const,
      detail: {
        job: row.id,
        attempt: row.attempts,
        maxAttempts: row.max_attempts,
        // A running job claimed again: its previous worker's lease expired (died, stalled).
        takeover: row.was_status === 'running',
        ...(row.was_status === 'running' ? { previousWorker: row.was_locked_by } : {}),
        leaseUntil: new Date(row.locked_until).toISOString(),
      },
    })),
  );
  return rows.map(toClaimedJob);
}

/**
 * Milliseconds until the next job becomes claimable (a pending job's `run_after` or a
 * running job's lease end), or `null` when nothing is waiting. The dispatcher sleeps this
 * long at most, so backoffs and expired leases are picked up without waiting for a poll.
 */
export async function msUntilNextClaimable(sql: Queryable): Promise<number | null> {
  const [row] = await sql<{ ms: number | null }[]>`
    select greatest(0, extract(epoch from (least(
      (select min(run_after) from outbox_jobs where status = 'pending'),
      (select min(locked_until) from outbox_jobs where status = 'running')
    ) - now())) * 1000)::float8 as ms`;
  return row?.ms ?? null;
}
