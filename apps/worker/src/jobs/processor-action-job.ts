import { type ClaimedJob, finishJob } from '@once/db/outbox';
import type { PaymentEventInput } from '@once/db/payment-events';
import type Stripe from 'stripe';
import { type ProcessorCall, takeCallEvents } from '../processor/processor-call-log.ts';
import { whileRenewingLease } from '../runtime/renew-lease.ts';
import { withDatabaseRetry } from '../runtime/transient-database-error.ts';
import type { ChargePaymentDeps } from './charge/charge-payment.ts';
import type { RecordResult } from './outcome-recorded-event.ts';

export type ActionJobResult = RecordResult | { job: 'skipped'; reason: string };

/** The ambiguous outcome of a job whose last attempt's lease ran out before it recorded. */
export const LEASE_EXPIRED_ON_LAST_ATTEMPT = {
  kind: 'ambiguous',
  reason: 'lease_expired_on_last_attempt',
} as const;

/**
 * One kind of operator money action as the worker runs it (capture or void, refund): what it
 * reads, when it has nothing to do, how one attempt asks the processor, and how it records.
 */
export interface ProcessorAction<TTarget extends { processor_secret_key: string }, TOutcome> {
  /** The log line's name (`action.attempted`, `refund.attempted`). */
  logName: string;
  /** The target's row (the action or the refund with its payment and tenant), or null. */
  load(job: ClaimedJob): Promise<TTarget | null>;
  /** Why the job ends without a processor call (`refund_succeeded`, ...), or null to act. */
  skipReason(target: TTarget | null): string | null;
  /** How a skipped job ends: `done` (answered already) or `dead` (nothing to act on). */
  endOfSkipped(target: TTarget | null, reason: string): 'done' | 'dead';
  /** One attempt at the processor, every call observed into `calls`. */
  attempt(processor: Stripe, target: TTarget, calls: ProcessorCall[]): Promise<TOutcome>;
  /** Records the outcome and finishes or reschedules the job in one transaction. */
  record(target: TTarget, outcome: TOutcome, events: PaymentEventInput[]): Promise<RecordResult>;
  /** The log line's fields that name the target (`{ refund: id }`). */
  describe(target: TTarget): Record<string, unknown>;
}

/**
 * Runs one claimed money-action job, the protocol every action shares with the charge: read
 * the target, end the job without a call when there is nothing to do, give the last attempt
 * whose lease ran out the ambiguous outcome (the reconciler takes it from there), otherwise ask
 * the processor once under the renewed lease, then record the outcome and its calls.
 *
 * @example
 * return runProcessorActionJob(job, deps, refundAction(deps.sql, job));
 */
export async function runProcessorActionJob<
  TTarget extends { processor_secret_key: string },
  TOutcome extends { kind: string },
>(
  job: ClaimedJob,
  deps: ChargePaymentDeps,
  action: ProcessorAction<TTarget, TOutcome | typeof LEASE_EXPIRED_ON_LAST_ATTEMPT>,
): Promise<ActionJobResult> {
  const retry = { log: deps.log, what: `job ${job.id}`, onHang: deps.onDatabaseHang };
  const target = await withDatabaseRetry(() => action.load(job), retry);
  const skip = action.skipReason(target);
  if (skip || !target) {
    const reason = skip ?? '';
    const end = action.endOfSkipped(target, reason);
    const finished = await withDatabaseRetry(() => finishJob(deps.sql, job, end, skip), retry);
    return finished ? { job: 'skipped', reason } : { job: 'lease_lost' };
  }
  const calls: ProcessorCall[] = [];
  const outcome =
    job.attempts > job.maxAttempts
      ? LEASE_EXPIRED_ON_LAST_ATTEMPT
      : await whileRenewingLease(job, deps, () =>
          action.attempt(deps.processorFor(target.processor_secret_key), target, calls),
        );
  deps.log(action.logName, {
    job: job.id,
    payment: job.paymentId,
    ...action.describe(target),
    attempt: job.attempts,
    outcome: outcome.kind,
  });
  const events = takeCallEvents(job, calls);
  return withDatabaseRetry(() => action.record(target, outcome, events), retry);
}
