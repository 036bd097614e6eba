import { type BackoffPolicy, equalJitterDelayMs } from '@once/backoff';
import { type ClaimedJob, finishJob, renewLease, rescheduleJob } from '@once/db/outbox';
import { type PaymentEventInput, recordPaymentEvents } from '@once/db/payment-events';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import { outcomeOfChargeError } from '../processor/charge-outcome.ts';
import { jobEvent, type ProcessorCall, takeCallEvents } from '../processor/processor-call-log.ts';
import type { Log } from '../runtime/logger.ts';
import {
  type DatabaseRetryOptions,
  withDatabaseRetry,
} from '../runtime/transient-database-error.ts';

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
  /** The confirm's `return_url` after a 3-D Secure challenge; unset, the reconciler cancels it. */
  returnUrl?: string;
}

/** What happened to the job when the outcome was recorded. */
export type RecordResult =
  | { job: 'done' }
  | { job: 'retry_scheduled'; delayMs: number }
  | { job: 'dead' }
  /** Another worker holds the job now: nothing was written. */
  | { job: 'lease_lost' };

/** What a job's run came to, as the dispatcher logs it. */
export type JobResult = RecordResult | { job: 'skipped'; reason: string };

/** The ambiguous outcome of a job whose last attempt's lease ran out before it recorded. */
const LEASE_EXPIRED_ON_LAST_ATTEMPT = {
  kind: 'ambiguous',
  reason: 'lease_expired_on_last_attempt',
} as const;
type LeaseExpired = typeof LEASE_EXPIRED_ON_LAST_ATTEMPT;

/** A write between an attempt's calls found the job taken over: nothing more is recorded. */
export const LEASE_LOST = Symbol('lease_lost');

/**
 * One kind of job that moves money at the processor (a charge, a capture or void, a refund):
 * what it reads, when it has nothing to do, how one attempt asks the processor, and how an
 * outcome that is not retried ends the job.
 */
export interface ProcessorAction<
  TTarget extends { processor_secret_key: string },
  TOutcome extends { kind: string },
> {
  /** The log line's name (`charge.attempted`, `action.attempted`, `refund.attempted`). */
  logName: string;
  /** The target's row (the payment, the action or the refund, with the tenant's key), or null. */
  load(): Promise<TTarget | null>;
  /** Why the job is dead when its target is not found (`refund_not_found`). */
  notFound: string;
  /** How the job ends without a processor call ({@link skipped}), or null to act. */
  skip(target: TTarget): WithoutCall | null;
  /** One attempt at the processor, every call observed into `calls`. */
  attempt(
    processor: Stripe,
    target: TTarget,
    calls: ProcessorCall[],
  ): Promise<TOutcome | typeof LEASE_LOST>;
  /** The fields that name the target, in the log line and the event (`{ refund: id }`). */
  describe(target: TTarget): Record<string, unknown>;
  /** The outcome as the `outcome.recorded` event shows it. */
  describeOutcome(outcome: TOutcome | LeaseExpired): Record<string, unknown>;
  /** Ends the job on an outcome not retried; `about` is the event's detail, to add to. */
  end(
    tx: postgres.TransactionSql,
    target: TTarget,
    outcome: TOutcome | LeaseExpired,
    about: Record<string, unknown>,
  ): Promise<RecordResult>;
}

/**
 * Runs one claimed job that moves money, the write-first protocol every kind shares: read the
 * target, end the job without a call when there is nothing to do, give the last attempt whose
 * lease ran out the ambiguous outcome (the reconciler takes it from there), otherwise ask the
 * processor once (every call under the job's downstream key) while the lease is renewed, then
 * record the outcome with its calls under the job's lock token ({@link recordOutcome}).
 */
export async function runProcessorActionJob<
  TTarget extends { processor_secret_key: string },
  TOutcome extends { kind: string },
>(job: ClaimedJob, deps: JobDeps, action: ProcessorAction<TTarget, TOutcome>): Promise<JobResult> {
  const retry = jobRetry(job, deps);
  const target = await withDatabaseRetry(() => action.load(), retry);
  if (!target) return finishWithoutCall(job, deps, skipped('dead', action.notFound));
  const skip = action.skip(target);
  if (skip) return finishWithoutCall(job, deps, skip);
  const calls: ProcessorCall[] = [];
  const outcome =
    job.attempts > job.maxAttempts
      ? LEASE_EXPIRED_ON_LAST_ATTEMPT
      : await whileRenewingLease(job, deps, () =>
          action.attempt(deps.processorFor(target.processor_secret_key), target, calls),
        );
  if (outcome === LEASE_LOST) return { job: 'lease_lost' };
  const why = outcome as { reason?: string; code?: string };
  deps.log(action.logName, {
    job: job.id,
    payment: job.paymentId,
    ...action.describe(target),
    attempt: job.attempts,
    outcome: outcome.kind,
    detail: why.reason ?? why.code,
  });
  const callEvents = takeCallEvents(job, calls);
  const about = { ...action.describe(target), outcome: action.describeOutcome(outcome) };
  return withDatabaseRetry(
    () =>
      recordOutcome(deps.sql, job, deps.backoff, { outcome, callEvents, about }, (tx) =>
        action.end(tx, target, outcome, about),
      ),
    retry,
  );
}

/**
 * Keeps the lease alive while `work` runs, renewing at a third of it so one missed renewal
 * does not lose it. A lost lease is only logged: the guarded record will write nothing,
 * which is exactly what must happen.
 */
async function whileRenewingLease<T>(
  job: ClaimedJob,
  deps: JobDeps,
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

/**
 * Records one attempt in ONE transaction guarded by the job's lock token: a doubt is retried
 * (`retryOnDoubt`), any other outcome ends the job through `end`. The attempt's calls and its
 * `outcome.recorded` event (`about`, which `end` may add to) are written only if the guarded
 * job update matched: a worker whose lease was taken over records nothing.
 */
export function recordOutcome(
  sql: postgres.Sql,
  job: ClaimedJob,
  backoff: BackoffPolicy,
  attempt: {
    outcome: { kind: string; reason?: string };
    callEvents: readonly PaymentEventInput[];
    about: Record<string, unknown>;
  },
  end: (tx: postgres.TransactionSql) => Promise<RecordResult>,
): Promise<RecordResult> {
  return sql.begin(async (tx) => {
    const result = (await retryOnDoubt(tx, job, attempt.outcome, backoff)) ?? (await end(tx));
    if (result.job === 'lease_lost') return result;
    const retryInMs = 'delayMs' in result ? { retryInMs: result.delayMs } : {};
    await recordPaymentEvents(tx, [
      ...attempt.callEvents,
      jobEvent(job, 'outcome.recorded', { ...attempt.about, jobNow: result.job, ...retryInMs }),
    ]);
    return result;
  });
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
 * How a job ends without a processor call. `paymentWas`: the payment was settled elsewhere,
 * and a `job.finished` event shows on its timeline how the job ended.
 */
interface WithoutCall {
  job: 'done' | 'dead';
  lastError: string;
  reason: string;
  paymentWas?: string;
}

/** A job ended without a call whose last error is the reason it returns. */
export function skipped(job: 'done' | 'dead', reason: string): WithoutCall {
  return { job, lastError: reason, reason };
}

async function finishWithoutCall(
  job: ClaimedJob,
  deps: JobDeps,
  end: WithoutCall,
): Promise<JobResult> {
  const finished = await withDatabaseRetry(
    () =>
      deps.sql.begin(async (tx) => {
        if (!(await finishJob(tx, job, end.job, end.lastError))) return false;
        if (end.paymentWas === undefined) return true;
        await recordPaymentEvents(tx, [
          jobEvent(job, 'job.finished', { paymentWas: end.paymentWas }),
        ]);
        return true;
      }),
    jobRetry(job, deps),
  );
  return finished ? { job: 'skipped', reason: end.reason } : { job: 'lease_lost' };
}

/**
 * What an attempt at an operator's money action comes to when the processor gave no answer
 * of the action's own kind: a definite 4xx (`refused`: nothing moved), or, as for a charge,
 * `in_flight` / `ambiguous`.
 */
export type ActionDoubt =
  | { kind: 'refused'; code: string; message?: string }
  | { kind: 'in_flight'; reason: string }
  | { kind: 'ambiguous'; reason: string };

/** A failed processor call as a money action reads it. */
export function actionOutcomeOfError(error: unknown): ActionDoubt {
  const outcome = outcomeOfChargeError(error);
  if (outcome.kind === 'in_flight' || outcome.kind === 'ambiguous') return outcome;
  return outcome.kind === 'rejected'
    ? { kind: 'refused', code: outcome.code, message: outcome.message }
    : { kind: 'refused', code: 'unexpected_answer', message: outcome.kind };
}

/**
 * Ends a money action's job on a doubt not retried: `refused` fails the target (nothing
 * moved), one out of attempts leaves it `unknown` for the reconciler.
 */
export async function endOnDoubt(
  tx: postgres.TransactionSql,
  job: ClaimedJob,
  outcome: ActionDoubt,
  setStatus: (
    status: 'failed' | 'unknown',
    code: string,
    message: string | null,
  ) => Promise<unknown>,
): Promise<RecordResult> {
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

/** How a job's database work is retried (`withDatabaseRetry`). */
export function jobRetry(job: ClaimedJob, deps: JobDeps): DatabaseRetryOptions {
  return { log: deps.log, what: `job ${job.id}`, onHang: deps.onDatabaseHang };
}
