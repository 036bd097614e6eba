import type { ClaimedJob } from '@once/db/outbox';
import { type PaymentEventInput, workerActor } from '@once/db/payment-events';

/** What happened to the job when the outcome was recorded. */
export type RecordResult =
  | { job: 'done' }
  | { job: 'retry_scheduled'; delayMs: number }
  | { job: 'dead' }
  /** Another worker holds the job now: nothing was written. */
  | { job: 'lease_lost' };

/**
 * The `outcome.recorded` event of one attempt, written with the outcome in the transaction whose
 * guarded job update matched (a worker whose lease was taken over records neither). `about`
 * names what was decided: the outcome, and the action or refund it was for.
 *
 * @example
 * await recordPaymentEvents(tx, [...callEvents, outcomeRecordedEvent(job, result, { refund: id, outcome })]);
 */
export function outcomeRecordedEvent(
  job: ClaimedJob,
  result: RecordResult,
  about: Record<string, unknown>,
): PaymentEventInput {
  return {
    tenantId: job.tenantId,
    paymentId: job.paymentId,
    actor: workerActor(job.lockedBy),
    kind: 'outcome.recorded',
    detail: {
      job: job.id,
      attempt: job.attempts,
      ...about,
      jobNow: result.job,
      ...('delayMs' in result ? { retryInMs: result.delayMs } : {}),
    },
  };
}
