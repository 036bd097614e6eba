import { msInterval, runStatement, type SqlRunner } from '@once/postgres/sql';
import { sql } from 'drizzle-orm';
import { isHeldBy, type JobHolder, NO_HOLDER } from './job-sql.ts';

/*
 * The holder's writes: every move out of `running` (job-states.ts), each guarded by
 * `isHeldBy`, so each returns false (and writes nothing) for a worker whose lease was taken
 * over. Run them in the transaction that records what the move means (the outcome, the
 * recorded intent), so a refused move leaves nothing else behind either.
 */

/** `running -> running`: extends the lease of a job this worker still holds. */
export async function renewLease(db: SqlRunner, job: JobHolder, leaseMs: number): Promise<boolean> {
  const rows = await runStatement(
    db,
    sql`update outbox_jobs
    set locked_until = now() + ${msInterval(leaseMs)}, updated_at = now()
    where ${isHeldBy('outbox_jobs', job)}
    returning id`,
  );
  return rows.length === 1;
}

/**
 * `running -> done | dead`: ends the job. `dead` gives it up; whoever settles its payment
 * (`unknown`, for the reconciler) does so in the same transaction.
 */
export async function finishJob(
  db: SqlRunner,
  job: JobHolder,
  status: 'done' | 'dead',
  lastError: string | null,
): Promise<boolean> {
  const rows = await runStatement(
    db,
    sql`update outbox_jobs
    set status = ${status}, last_error = ${lastError}, ${NO_HOLDER}, updated_at = now()
    where ${isHeldBy('outbox_jobs', job)}
    returning id`,
  );
  return rows.length === 1;
}

export interface RescheduleOptions {
  /**
   * False gives the claim back: the attempt does not count toward `max_attempts` (the
   * processor is still working on it, which says nothing about this job's health).
   */
  countAttempt?: boolean;
}

/**
 * `running -> pending`: the job runs again after `delayMs` (the database clock's), with the
 * same downstream key.
 */
export async function rescheduleJob(
  db: SqlRunner,
  job: JobHolder,
  delayMs: number,
  lastError: string,
  options: RescheduleOptions = {},
): Promise<boolean> {
  const givenBack = options.countAttempt === false ? 1 : 0;
  const rows = await runStatement(
    db,
    sql`update outbox_jobs
    set status = 'pending', attempts = greatest(0, attempts - ${givenBack}),
        run_after = now() + ${msInterval(delayMs)},
        last_error = ${lastError}, ${NO_HOLDER}, updated_at = now()
    where ${isHeldBy('outbox_jobs', job)}
    returning id`,
  );
  return rows.length === 1;
}

/**
 * Locks the job row if this worker still holds it, for a write elsewhere (the payment's
 * recovery point) that must commit only under the claim: held until the transaction ends.
 */
export async function lockHeldJob(db: SqlRunner, job: JobHolder): Promise<boolean> {
  const rows = await runStatement(
    db,
    sql`select 1 from outbox_jobs where ${isHeldBy('outbox_jobs', job)} for update`,
  );
  return rows.length === 1;
}
