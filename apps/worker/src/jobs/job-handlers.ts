import type { ClaimedJob } from '@once/db/outbox';
import type { OutboxJobKind } from '@once/db/schema';
import { runAuthorizationAction } from './authorization/authorization-action.ts';
import { chargePayment } from './charge/charge-payment.ts';
import type { JobDeps, JobResult } from './processor-action-job.ts';
import { refundPaymentJob } from './refund/refund-payment.ts';

type JobHandlers = {
  [K in OutboxJobKind]: (job: ClaimedJob<K>, deps: JobDeps) => Promise<JobResult>;
};

/**
 * The handler of each kind of outbox job. A kind added to `outboxJobKinds` (capture, cancel,
 * refund) does not type-check here until it has its handler, and the dispatcher claims only
 * the kinds listed here, so a worker never claims a job it cannot run.
 */
const jobHandlers: JobHandlers = {
  charge_payment: chargePayment,
  capture_payment: runAuthorizationAction,
  void_payment: runAuthorizationAction,
  refund_payment: refundPaymentJob,
};

/** The kinds the dispatcher claims. */
export const handledJobKinds = Object.keys(jobHandlers) as OutboxJobKind[];

/**
 * Runs a claimed job with the handler of its kind.
 */
export function runJob<K extends OutboxJobKind>(
  job: ClaimedJob<K>,
  deps: JobDeps,
): Promise<JobResult> {
  return jobHandlers[job.kind](job, deps);
}
