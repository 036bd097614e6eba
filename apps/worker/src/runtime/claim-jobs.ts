import {
  type ClaimedJob,
  claimDueJobs,
  type ClaimOptions as OutboxClaimOptions,
} from '@once/db/outbox';
import { recordPaymentEvents, workerActor } from '@once/db/payment-events';
import type postgres from 'postgres';
import { handledJobKinds } from '../jobs/job-handlers.ts';

/** The outbox's claim options; the kinds are the ones this worker has handlers for. */
type ClaimOptions = Omit<OutboxClaimOptions, 'kinds'>;

/**
 * Claims up to `limit` due jobs of the kinds this worker runs (`claimDueJobs` of
 * `@once/db/outbox`: pending jobs whose `run_after` has come, and running jobs whose lease
 * expired, each with a fresh `lock_token`), and records a `job.claimed` event for each.
 */
export async function claimJobs(
  sql: postgres.Sql | postgres.TransactionSql,
  options: ClaimOptions,
): Promise<ClaimedJob[]> {
  // The claim and its `job.claimed` events commit together: a claim nobody can see in the
  // timeline never happened, and a rolled-back claim leaves no event.
  if ('begin' in sql) return sql.begin((tx) => claimInTransaction(tx, options));
  return claimInTransaction(sql, options);
}

async function claimInTransaction(
  sql: postgres.TransactionSql,
  options: ClaimOptions,
): Promise<ClaimedJob[]> {
  const claims = await claimDueJobs(sql, { ...options, kinds: handledJobKinds });
  await recordPaymentEvents(
    sql,
    claims.map(({ job, takeover, previousWorker }) => ({
      tenantId: job.tenantId,
      paymentId: job.paymentId,
      actor: workerActor(options.workerId),
      kind: 'job.claimed' as const,
      detail: {
        job: job.id,
        attempt: job.attempts,
        maxAttempts: job.maxAttempts,
        // A running job claimed again: its previous worker's lease expired (died, stalled).
        takeover,
        ...(takeover ? { previousWorker } : {}),
        leaseUntil: job.lockedUntil.toISOString(),
      },
    })),
  );
  return claims.map((claim) => claim.job);
}
