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
