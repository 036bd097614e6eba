import type postgres from 'postgres';
import type { Log } from './logger.ts';
import { msInterval } from './ms-interval.ts';
import type { ClaimedJob } from './outbox-job.ts';
import type { Queryable } from './queryable.ts';

/**
 * Extends the lease of a job this worker still holds. Returns false when the lease was
 * taken over (another worker claimed the job with a new token): the caller then knows
 * its outcome will not be recorded, and must not try to record it another way.
 *
 * @example
 * if (!(await renewLease(sql, job, 30_000))) log('lease.lost', { job: job.id });
 */
export async function renewLease(
  sql: Queryable,
  job: ClaimedJob,
  leaseMs: number,
): Promise<boolean> {
  const rows = await sql`
    update outbox_jobs
    set locked_until = now() + ${msInterval(sql, leaseMs)}, updated_at = now()
    where tenant_id = ${job.tenantId} and id = ${job.id}
      and status = 'running' and lock_token = ${job.lockToken}
    returning locked_until`;
  return rows.length === 1;
}

/**
 * Keeps the lease alive while `work` runs, renewing at a third of the lease so one missed
 * renewal (a slow query, a reconnect) does not lose it. A lost lease is only logged: the
 * guarded finish will write nothing, which is exactly what must happen.
 *
 * The worker's own heartbeat, not the idempotency library's scheduler: that one is internal to
 * the library (not exported) and batches the many short leases of one engine's requests on
 * one timer; here one charge job holds one lease (at most the dispatcher's concurrency per
 * process), renewed with `renewLease` against `outbox_jobs`.
 *
 * @example
 * const outcome = await whileRenewingLease(job, { sql, leaseMs: 30_000, log }, () => charge(job));
 */
export async function whileRenewingLease<T>(
  job: ClaimedJob,
  deps: { sql: postgres.Sql; leaseMs: number; log: Log },
  work: () => Promise<T>,
): Promise<T> {
  let held = true;
  const timer = setInterval(
    () => {
      if (!held) return;
      renewLease(deps.sql, job, deps.leaseMs).then(
        (renewed) => {
          if (!renewed) {
            held = false;
            deps.log('lease.lost', { job: job.id, payment: job.paymentId });
          }
        },
        (error: unknown) => deps.log('lease.renew_failed', { job: job.id, error: String(error) }),
      );
    },
    Math.max(50, Math.floor(deps.leaseMs / 3)),
  );
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
