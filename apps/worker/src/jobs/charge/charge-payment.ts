import { type ClaimedJob, lockHeldJob } from '@once/db/outbox';
import { type PaymentEventInput, recordPaymentEvents } from '@once/db/payment-events';
import { confirmKeyFor } from '@once/payments';
import type postgres from 'postgres';
import Stripe from 'stripe';
import {
  type ChargeOutcome,
  isUnexpectedIntentState,
  outcomeOfChargeError,
  outcomeOfPaymentIntent,
  type PaymentIntentState,
  settledOutcomeOf,
} from '../../processor/charge-outcome.ts';
import { findPaymentIntentByMetadata } from '../../processor/find-payment-intent.ts';
import {
  jobEvent,
  observedCall,
  type ProcessorCall,
  takeCallEvents,
} from '../../processor/processor-call-log.ts';
import { withDatabaseRetry } from '../../runtime/transient-database-error.ts';
import {
  type JobDeps,
  type JobResult,
  jobRetry,
  LEASE_LOST,
  runProcessorActionJob,
  skipped,
} from '../processor-action-job.ts';
import {
  type AdoptedIntentHistory,
  outcomeOfAdoptedIntent,
  readAdoptedIntentHistory,
} from './adopted-intent-history.ts';
import { describeChargeOutcome, endCharge } from './record-charge-outcome.ts';

/** The test payment method when the checkout did not name one (Stripe's test Visa). */
const DEFAULT_PAYMENT_METHOD = 'pm_card_visa';

interface ChargeTarget {
  status: string;
  amount: number;
  currency: string;
  processor_secret_key: string;
  /** `manual`: the create asks for `capture_method: manual`, so the confirm only authorises. */
  capture_method: 'automatic' | 'manual';
  /** Recorded by step A; null means no confirm was ever sent for this payment. */
  processor_payment_intent_id: string | null;
}

/** What the calls of one attempt found, with the history of an intent taken over. */
interface ChargeAttempt {
  outcome: ChargeOutcome;
  adopted?: AdoptedIntentHistory;
}

/**
 * Runs one claimed charge job on the template, top to bottom like the two-step charge
 * (docs/decisions/0009-two-step-charge.md): only an intent whose id is recorded under the
 * job's lock token is ever confirmed, and an intent charges at most once, so a confirm re-sent
 * late, after the processor forgot its key, cannot charge twice.
 */
export function chargePayment(
  job: ClaimedJob<'charge_payment'>,
  deps: JobDeps,
): Promise<JobResult> {
  const { sql, log } = deps;
  return runProcessorActionJob<ChargeTarget, ChargeOutcome & { adopted?: AdoptedIntentHistory }>(
    job,
    deps,
    {
      logName: 'charge.attempted',
      load: () => loadChargeTarget(sql, job),
      notFound: 'payment_not_found',
      // Only the processor's word settles a payment (this worker's answers, the reconciler's,
      // a webhook's intent as the processor returns it when asked), so a payment settled
      // elsewhere was really charged or declined.
      skip: ({ status }) =>
        status === 'processing' || status === 'unknown'
          ? null
          : {
              ...skipped('done', `payment_${status}`),
              lastError: `already_${status}`,
              paymentWas: status,
            },
      attempt: async (processor, target, calls) => {
        const recordIntent = (intentId: string) => {
          const events = takeCallEvents(job, calls);
          return withDatabaseRetry(
            () => recordPaymentIntentId(sql, job, intentId, events),
            jobRetry(job, deps),
          );
        };
        const attempt = await chargeInTwoSteps(
          processor,
          job,
          target,
          calls,
          recordIntent,
          deps.returnUrl,
        );
        if (attempt !== LEASE_LOST) return { ...attempt.outcome, adopted: attempt.adopted };
        log('charge.intent_not_recorded', { job: job.id, payment: job.paymentId });
        return LEASE_LOST;
      },
      describe: () => ({}),
      describeOutcome: describeChargeOutcome,
      end: (tx, _target, outcome, about) =>
        endCharge(tx, job, outcome, about, 'adopted' in outcome ? outcome.adopted : undefined),
    },
  );
}

async function loadChargeTarget(sql: postgres.Sql, job: ClaimedJob): Promise<ChargeTarget | null> {
  const [row] = await sql<ChargeTarget[]>`
    select payment.status, payment.amount, payment.currency, tenant.processor_secret_key,
           payment.processor_payment_intent_id, payment.capture_method
    from payments as payment
    join tenants as tenant on tenant.id = payment.tenant_id
    where payment.tenant_id = ${job.tenantId} and payment.id = ${job.paymentId}`;
  return row ?? null;
}

async function chargeInTwoSteps(
  processor: Stripe,
  job: ClaimedJob,
  target: ChargeTarget,
  calls: ProcessorCall[],
  recordIntent: (intentId: string) => Promise<boolean>,
  returnUrl: string | undefined,
): Promise<ChargeAttempt | typeof LEASE_LOST> {
  const paymentMethod =
    typeof job.payload.paymentMethod === 'string'
      ? job.payload.paymentMethod
      : DEFAULT_PAYMENT_METHOD;
  try {
    let intent: PaymentIntentState;
    if (target.processor_payment_intent_id) {
      // Asked first, by id: the answer is complete, unlike a search.
      const intentId = target.processor_payment_intent_id;
      intent = await observedCall(calls, { call: 'retrieve', intent: intentId }, () =>
        processor.paymentIntents.retrieve(intentId),
      );
    } else {
      // No confirm was ever sent for THIS payment, but another payment of the same checkout
      // (its row lost to a failover, the client retrying) may have charged: its intent carries
      // this payment's downstream key, the checkout's. Adopt what the (eventually consistent)
      // search sees, a previous attempt's intent whose answer was lost included; past the
      // processor's key retention this search is the only guard, and an intent that old is
      // indexed. Otherwise create: the key replays an intent the search has not seen yet.
      const found = await observedCall(calls, { call: 'search' }, () =>
        findPaymentIntentByMetadata(
          processor,
          job.tenantId,
          { paymentId: job.paymentId, downstreamKey: job.downstreamKey },
          target,
        ),
      );
      if (found) {
        intent = found;
      } else {
        const created = await createIntent(processor, job, target, paymentMethod, calls);
        if ('kind' in created) return { outcome: created };
        intent = created;
      }
      if (!(await recordIntent(intent.id))) return LEASE_LOST;
    }

    const outcome =
      settledOutcomeOf(intent) ??
      (await confirmOnce(processor, intent.id, job.downstreamKey, calls, {
        payment_method: paymentMethod,
        ...(returnUrl ? { return_url: returnUrl } : {}),
      }));
    const adopted = await readAdoptedIntentHistory(
      processor,
      intent,
      outcome.kind,
      job.paymentId,
      calls,
    );
    return adopted ? { outcome: outcomeOfAdoptedIntent(outcome, adopted), adopted } : { outcome };
  } catch (error) {
    return { outcome: outcomeOfChargeError(error) };
  }
}

/**
 * Step A's recovery point: writes the intent's id on the payment under the job's lock token,
 * so every confirm that may ever leave is on an intent known by id. Never over a different id
 * (`false`, as when the lease was lost: the caller confirms nothing); the same id again is a
 * no-op success, so a retried commit whose answer was lost is harmless.
 */
async function recordPaymentIntentId(
  sql: postgres.Sql,
  job: ClaimedJob,
  intentId: string,
  /** The processor calls that led here (`processor.call`), recorded with the intent. */
  callEvents: readonly PaymentEventInput[] = [],
): Promise<boolean> {
  return sql.begin(async (tx) => {
    if (!(await lockHeldJob(tx, job))) return false;
    const rows = await tx`
      update payments
      set processor_payment_intent_id = ${intentId}, updated_at = now()
      where tenant_id = ${job.tenantId} and id = ${job.paymentId}
        and (processor_payment_intent_id is null or processor_payment_intent_id = ${intentId})
      returning id`;
    if (rows.length !== 1) return false;
    await recordPaymentEvents(tx, [
      ...callEvents,
      jobEvent(job, 'intent.recorded', { intent: intentId }),
    ]);
    return true;
  });
}

/**
 * Step A's create, WITHOUT confirming, under the payment's downstream key. The processor
 * refusing the key as used with other parameters means an earlier payment of this checkout
 * created an intent the search does not see yet: never a decline, ask again later.
 */
async function createIntent(
  processor: Stripe,
  job: ClaimedJob,
  target: ChargeTarget,
  paymentMethod: string,
  calls: ProcessorCall[],
): Promise<PaymentIntentState | ChargeOutcome> {
  try {
    return await observedCall(calls, { call: 'create', key: job.downstreamKey }, () =>
      processor.paymentIntents.create(
        {
          amount: target.amount,
          currency: target.currency,
          payment_method: paymentMethod,
          ...(target.capture_method === 'manual' ? { capture_method: 'manual' as const } : {}),
          // What the worker and the reconciler search by when an intent's id is not recorded.
          metadata: {
            payment_id: job.paymentId,
            tenant_id: job.tenantId,
            downstream_key: job.downstreamKey,
          },
        },
        { idempotencyKey: job.downstreamKey },
      ),
    );
  } catch (error) {
    if (!(error instanceof Stripe.errors.StripeIdempotencyError)) throw error;
    return { kind: 'ambiguous', reason: 'create_key_used_by_an_earlier_payment_of_this_checkout' };
  }
}

/**
 * Step B: confirm the recorded intent; if someone else already did, read what happened.
 * The same parameters on every attempt (the payment's method and the deployment's return
 * URL), so a re-sent confirm replays under its key instead of being refused as a reuse.
 */
async function confirmOnce(
  processor: Stripe,
  intentId: string,
  downstreamKey: string,
  calls: ProcessorCall[],
  params: Stripe.PaymentIntentConfirmParams,
): Promise<ChargeOutcome> {
  try {
    const confirmed = await observedCall(
      calls,
      { call: 'confirm', key: confirmKeyFor(downstreamKey), intent: intentId },
      () =>
        processor.paymentIntents.confirm(intentId, params, {
          idempotencyKey: confirmKeyFor(downstreamKey),
        }),
    );
    return outcomeOfPaymentIntent(confirmed);
  } catch (error) {
    if (!isUnexpectedIntentState(error)) throw error;
    return outcomeOfPaymentIntent(
      await observedCall(calls, { call: 'retrieve', intent: intentId }, () =>
        processor.paymentIntents.retrieve(intentId),
      ),
    );
  }
}
