import { sqlLiteralList } from '@once/postgres/sql';
import { type SQL, sql } from 'drizzle-orm';
import { liveJobStatuses } from './job-states.ts';

/**
 * The outbox job state machine (`job-states.ts`) as the SQL every outbox statement composes:
 * each condition is named once here, and the claim, the holder's writes, the reconciler and
 * the payment's guarded settle are built from them, so a rule changes here or nowhere.
 *
 * Predicates take the alias of the `outbox_jobs` row they test (`job`, `outbox_jobs`, ...).
 */

const col = (j: string, column: string) => sql.raw(`${j}.${column}`);

/** The job who holds it must prove it holds: its key and the token of its claim. */
export interface JobHolder {
  tenantId: string;
  id: string;
  lockToken: string;
}

/** Pending or running: the job will still run, or is running (`liveJobStatuses`). */
export function isLiveJob(j: string): SQL {
  return sql`${col(j, 'status')} in ${sqlLiteralList(liveJobStatuses)}`;
}

/**
 * What a claim may take: a pending job whose `run_after` has come, or a running job whose
 * lease expired (its worker died or stalled: the claim IS the outbox's lease sweeper).
 * Times are the database clock's only, so workers with skewed clocks agree.
 */
export function isClaimable(j: string): SQL {
  return sql`((${col(j, 'status')} = 'pending' and ${col(j, 'run_after')} <= now())
    or (${col(j, 'status')} = 'running' and ${col(j, 'locked_until')} < now()))`;
}

/**
 * Holder-only writes: this job, still running, still under this claim's `lock_token`. A
 * worker whose lease was taken over matches no row, so it renews, reschedules, finishes and
 * records nothing.
 */
export function isHeldBy(j: string, holder: JobHolder): SQL {
  return sql`${col(j, 'tenant_id')} = ${holder.tenantId} and ${col(j, 'id')} = ${holder.id}
    and ${col(j, 'status')} = 'running' and ${col(j, 'lock_token')} = ${holder.lockToken}`;
}

/** Columns cleared when nobody holds the job any more (rescheduled or finished). */
export const NO_HOLDER = sql`locked_by = null, lock_token = null, locked_until = null`;
