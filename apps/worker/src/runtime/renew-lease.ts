import { type ClaimedJob, renewLease } from '@once/db/outbox';
import type postgres from 'postgres';
import type { Log } from './logger.ts';

/**
 * Keeps the lease alive while `work` runs, renewing at a third of it so one missed renewal
 * does not lose it. A lost lease is only logged: the guarded finish will write nothing,
 * which is exactly what must happen.
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
