import type { ClaimedJob } from '@once/db/outbox';
import { type PaymentEventInput, workerActor } from '@once/db/payment-events';
import type { RecordResult } from './record-charge-outcome.ts';

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
