import {
  type ClaimedJob,
  claimDueJobs,
  type ClaimOptions as OutboxClaimOptions,
} from '@once/db/outbox';
import { recordPaymentEvents } from '@once/db/payment-events';
import type postgres from 'postgres';
import { handledJobKinds } from '../jobs/job-handlers.ts';
import { jobEvent } from '../processor/processor-call-log.ts';

/** The outbox's claim options; the kinds are the ones this worker has handlers for. */
type ClaimOptions = Omit<OutboxClaimOptions, 'kinds'>;

/**
 * Claims up to `limit` due jobs of the kinds this worker runs (`claimDueJobs` of
 * `@once/db/outbox`: pending jobs whose `run_after` has come, and running jobs whose lease
 * expired, each with a fresh `lock_token`), and records a `job.claimed` event for each.
 */
export function claimJobs(sql: postgres.Sql, options: ClaimOptions): Promise<ClaimedJob[]> {
  // The claim and its `job.claimed` events commit together: a claim nobody can see in the
  // timeline never happened, and a rolled-back claim leaves no event.
  return sql.begin(async (tx) => {
    const claims = await claimDueJobs(tx, { ...options, kinds: handledJobKinds });
    await recordPaymentEvents(
      tx,
      claims.map(({ job, takeover, previousWorker }) =>
        jobEvent(job, 'job.claimed', {
          maxAttempts: job.maxAttempts,
          // A running job claimed again: its previous worker's lease expired (died, stalled).
          takeover,
          ...(takeover ? { previousWorker } : {}),
          leaseUntil: job.lockedUntil.toISOString(),
        }),
      ),
    );
    return claims.map((claim) => claim.job);
  });
}
