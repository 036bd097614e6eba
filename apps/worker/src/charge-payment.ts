import type postgres from 'postgres';
import type Stripe from 'stripe';
import type { BackoffPolicy } from './backoff.ts';
import {
  type ChargeOutcome,
  outcomeOfChargeError,
  outcomeOfPaymentIntent,
} from './charge-outcome.ts';
import type { Log } from './logger.ts';
import type { ClaimedJob } from './outbox-job.ts';
import { finishJob, type RecordResult, recordChargeOutcome } from './record-charge-outcome.ts';
import { renewLease } from './renew-lease.ts';
import { withDatabaseRetry } from './transient-database-error.ts';

/** The test payment method when the checkout did not name one (Stripe's test Visa). */
export const DEFAULT_PAYMENT_METHOD = 'pm_card_visa';

export interface ChargePaymentDeps {
  sql: postgres.Sql;
  /** The SDK for a tenant's secret key. */
  processorFor: (secretKey: string) => Stripe;
  leaseMs: number;
  backoff: BackoffPolicy;
  log: Log;
}

export type ChargeJobResult = RecordResult | { job: 'skipped'; reason: string };

interface ChargeTarget {
  status: string;
  amount: number;
  currency: string;
  processor_secret_key: string;
}

/**
 * Runs one claimed charge job, top to bottom like the protocol:
 * 1. read the payment and the tenant's processor key;
 * 2. give up without calling if the job already used all its attempts (it keeps killing
 *    or stalling its workers) or its payment is already settled;
 * 3. create + confirm the PaymentIntent with the job's downstream Idempotency-Key,
 *    renewing the lease while the call is in flight;
 * 4. record the outcome and finish the job in one transaction guarded by the lock token.
 *
 * @example
 * await chargePayment(job, { sql, processorFor, leaseMs: 30_000, backoff, log });
 */
export async function chargePayment(
  job: ClaimedJob,
  deps: ChargePaymentDeps,
): Promise<ChargeJobResult> {
  const { sql, log } = deps;
  const retry = { log, what: `job ${job.id}` };

  // 1. What to charge, and with whose key.
  const target = await withDatabaseRetry(() => loadChargeTarget(sql, job), retry);
  if (!target) {
    const finished = await withDatabaseRetry(
      () => finishJob(sql, job, 'dead', 'payment_not_found'),
      retry,
    );
    return finished ? { job: 'skipped', reason: 'payment_not_found' } : { job: 'lease_lost' };
  }

  // 2. Nothing to do, or nothing more we are allowed to do.
  if (target.status !== 'processing' && target.status !== 'unknown') {
    const finished = await withDatabaseRetry(
      () => finishJob(sql, job, 'done', `already_${target.status}`),
      retry,
    );
    return finished
      ? { job: 'skipped', reason: `payment_${target.status}` }
      : { job: 'lease_lost' };
  }
  if (job.attempts > job.maxAttempts) {
    const outcome: ChargeOutcome = { kind: 'ambiguous', reason: 'lease_expired_on_last_attempt' };
    return withDatabaseRetry(() => recordChargeOutcome(sql, job, outcome, deps.backoff), retry);
  }

  // 3. The one external side effect.
  const processor = deps.processorFor(target.processor_secret_key);
  const outcome = await whileRenewingLease(job, deps, () =>
    createAndConfirmPaymentIntent(processor, job, target),
  );
  log('charge.attempted', {
    job: job.id,
    payment: job.paymentId,
    attempt: job.attempts,
    outcome: outcome.kind,
    detail: 'reason' in outcome ? outcome.reason : 'code' in outcome ? outcome.code : undefined,
  });

  // 4. Record it, or nothing if our lease was taken over.
  return withDatabaseRetry(() => recordChargeOutcome(sql, job, outcome, deps.backoff), retry);
}

async function loadChargeTarget(sql: postgres.Sql, job: ClaimedJob): Promise<ChargeTarget | null> {
  const [row] = await sql<ChargeTarget[]>`
    select payment.status, payment.amount, payment.currency, tenant.processor_secret_key
    from payments as payment
    join tenants as tenant on tenant.id = payment.tenant_id
    where payment.tenant_id = ${job.tenantId} and payment.id = ${job.paymentId}`;
  return row ?? null;
}

async function createAndConfirmPaymentIntent(
  processor: Stripe,
  job: ClaimedJob,
  target: ChargeTarget,
): Promise<ChargeOutcome> {
  const paymentMethod =
    typeof job.payload.paymentMethod === 'string'
      ? job.payload.paymentMethod
      : DEFAULT_PAYMENT_METHOD;
  try {
    const intent = await processor.paymentIntents.create(
      {
        amount: target.amount,
        currency: target.currency,
        confirm: true,
        payment_method: paymentMethod,
        // What the reconciler searches by when the response was lost.
        metadata: { payment_id: job.paymentId, tenant_id: job.tenantId },
      },
      // Every attempt of this job, and every re-enqueued job of this payment, sends the
      // same key: the processor charges at most once and replays the result after that.
      { idempotencyKey: job.downstreamKey },
    );
    return outcomeOfPaymentIntent(intent);
  } catch (error) {
    return outcomeOfChargeError(error);
  }
}

/**
 * Keeps the lease alive while `work` runs, renewing at a third of the lease so one missed
 * renewal (a slow query, a reconnect) does not lose it. A lost lease is only logged: the
 * guarded finish will write nothing, which is exactly what must happen.
 */
async function whileRenewingLease<T>(
  job: ClaimedJob,
  deps: ChargePaymentDeps,
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
