import { type BackoffPolicy, equalJitterDelayMs } from '@once/backoff';
import { type ClaimedJob, finishJob, rescheduleJob } from '@once/db/outbox';
import { type PaymentEventInput, recordPaymentEvents, workerActor } from '@once/db/payment-events';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import { outcomeOfChargeError } from '../processor/charge-outcome.ts';
import { type ProcessorCall, takeCallEvents } from '../processor/processor-call-log.ts';
import type { Log } from '../runtime/logger.ts';
import { whileRenewingLease } from '../runtime/renew-lease.ts';
import { withDatabaseRetry } from '../runtime/transient-database-error.ts';

/** What every job kind runs with. */
export interface JobDeps {
  sql: postgres.Sql;
  /** The SDK for a tenant's secret key. */
  processorFor: (secretKey: string) => Stripe;
  leaseMs: number;
  backoff: BackoffPolicy;
  log: Log;
  /** What to do when a database call hangs past every server timeout (replace the pool). */
  onDatabaseHang?: () => void;
  /**
   * Where the processor sends the shopper back after a 3-D Secure challenge (the confirm's
   * `return_url`: the web app's return page). Unset: a card that needs the challenge gets no
   * page to send the shopper to, and its payment waits until the reconciler cancels it.
   */
  returnUrl?: string;
}

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

/** What a job's run came to, as the dispatcher logs it. */
export type JobResult = RecordResult | { job: 'skipped'; reason: string };

/** The ambiguous outcome of a job whose last attempt's lease ran out before it recorded. */
const LEASE_EXPIRED_ON_LAST_ATTEMPT = {
  kind: 'ambiguous',
  reason: 'lease_expired_on_last_attempt',
} as const;

/**
 * What an attempt at an operator's money action comes to when the processor gave no answer
 * of the action's own kind: a definite 4xx (`refused`: nothing moved), or, as for a charge,
 * `in_flight` / `ambiguous`.
 */
export type ActionDoubt =
  | { kind: 'refused'; code: string; message?: string }
  | { kind: 'in_flight'; reason: string }
  | { kind: 'ambiguous'; reason: string };

/**
 * A failed processor call as a money action reads it.
 */
export function actionOutcomeOfError(error: unknown): ActionDoubt {
  const outcome = outcomeOfChargeError(error);
  switch (outcome.kind) {
    case 'in_flight':
    case 'ambiguous':
      return outcome;
    case 'rejected':
      return { kind: 'refused', code: outcome.code, message: outcome.message };
    default:
      return { kind: 'refused', code: 'unexpected_answer', message: outcome.kind };
  }
}

/**
 * Reschedules the job on a doubt, in the recording transaction: `in_flight` at the backoff
 * cap (jittered, so held jobs do not poll the processor in lockstep) without using up an
 * attempt, `ambiguous` with backoff while attempts are left (the same downstream key next
 * time). Null: not retried, the job ends.
 */
export async function retryOnDoubt(
  tx: postgres.TransactionSql,
  job: ClaimedJob,
  outcome: { kind: string; reason?: string },
  backoff: BackoffPolicy,
): Promise<RecordResult | null> {
  const inFlight = outcome.kind === 'in_flight';
  if (!inFlight && (outcome.kind !== 'ambiguous' || job.attempts >= job.maxAttempts)) return null;
  const delayMs = equalJitterDelayMs(inFlight ? Number.POSITIVE_INFINITY : job.attempts, backoff);
  const rescheduled = await rescheduleJob(tx, job, delayMs, outcome.reason ?? outcome.kind, {
    countAttempt: !inFlight,
  });
  return rescheduled ? { job: 'retry_scheduled', delayMs } : { job: 'lease_lost' };
}

/**
 * One kind of operator money action as the worker runs it (capture or void, refund): what it
 * reads, when it has nothing to do, how one attempt asks the processor, and how it records
 * the processor's answer.
 */
export interface ProcessorAction<TTarget extends { processor_secret_key: string }, TAnswer> {
  /** The log line's name (`action.attempted`, `refund.attempted`). */
  logName: string;
  /** The target's row (the action or the refund with its payment and tenant), or null. */
  load(job: ClaimedJob): Promise<TTarget | null>;
  /** Why the job ends without a processor call (`refund_succeeded`, ...), or null to act. */
  skipReason(target: TTarget | null): string | null;
  /** How a skipped job ends: `done` (answered already) or `dead` (nothing to act on). */
  endOfSkipped(target: TTarget | null, reason: string): 'done' | 'dead';
  /** One attempt at the processor, every call observed into `calls`. */
  attempt(
    processor: Stripe,
    target: TTarget,
    calls: ProcessorCall[],
  ): Promise<TAnswer | ActionDoubt>;
  /** The fields that name the target, in the log line and the event (`{ refund: id }`). */
  describe(target: TTarget): Record<string, unknown>;
  /** The outcome as the `outcome.recorded` event shows it. */
  describeOutcome(outcome: TAnswer | ActionDoubt): Record<string, unknown>;
  /** Moves the target to `failed` (refused) or `unknown` (out of attempts), if still unanswered. */
  setStatus(
    tx: postgres.TransactionSql,
    target: TTarget,
    status: 'failed' | 'unknown',
    code: string,
    message: string | null,
  ): Promise<unknown>;
  /** Records the processor's answer and finishes or reschedules the job (or `lease_lost`). */
  recordAnswer(
    tx: postgres.TransactionSql,
    target: TTarget,
    answer: TAnswer,
  ): Promise<RecordResult>;
}

function isDoubt(outcome: { kind: string }): outcome is ActionDoubt {
  return ['refused', 'in_flight', 'ambiguous'].includes(outcome.kind);
}

/**
 * Runs one claimed money-action job, the protocol every action shares with the charge: read
 * the target, end the job without a call when there is nothing to do, give the last attempt
 * whose lease ran out the ambiguous outcome (the reconciler takes it from there), otherwise ask
 * the processor once under the renewed lease, then record the outcome and its calls in ONE
 * transaction guarded by the job's lock token (a worker whose lease was taken over writes
 * nothing): a doubt is retried (`retryOnDoubt`), and after `max_attempts` leaves the target
 * `unknown` (job `dead`); a refusal ends the job and the target `failed`.
 */
export async function runProcessorActionJob<
  TTarget extends { processor_secret_key: string },
  TAnswer extends { kind: string },
>(job: ClaimedJob, deps: JobDeps, action: ProcessorAction<TTarget, TAnswer>): Promise<JobResult> {
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
  const record = (tx: postgres.TransactionSql): Promise<RecordResult> => {
    if (!isDoubt(outcome)) return action.recordAnswer(tx, target, outcome);
    return recordDoubt(tx, job, outcome, deps.backoff, (status, code, message) =>
      action.setStatus(tx, target, status, code, message),
    );
  };
  return withDatabaseRetry(
    () =>
      deps.sql.begin(async (tx) => {
        const result = await record(tx);
        if (result.job === 'lease_lost') return result;
        // Written only after the guarded job update matched.
        const about = { ...action.describe(target), outcome: action.describeOutcome(outcome) };
        await recordPaymentEvents(tx, [...events, outcomeRecordedEvent(job, result, about)]);
        return result;
      }),
    retry,
  );
}

async function recordDoubt(
  tx: postgres.TransactionSql,
  job: ClaimedJob,
  outcome: ActionDoubt,
  backoff: BackoffPolicy,
  setStatus: (
    status: 'failed' | 'unknown',
    code: string,
    message: string | null,
  ) => Promise<unknown>,
): Promise<RecordResult> {
  const retried = await retryOnDoubt(tx, job, outcome, backoff);
  if (retried) return retried;
  if (outcome.kind === 'refused') {
    if (!(await finishJob(tx, job, 'done', `refused: ${outcome.code}`)))
      return { job: 'lease_lost' };
    await setStatus('failed', outcome.code, outcome.message ?? null);
    return { job: 'done' };
  }
  if (!(await finishJob(tx, job, 'dead', outcome.reason))) return { job: 'lease_lost' };
  await setStatus('unknown', 'retries_exhausted', outcome.reason);
  return { job: 'dead' };
}
