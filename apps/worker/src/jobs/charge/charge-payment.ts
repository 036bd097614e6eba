import { type ClaimedJob, finishJob } from '@once/db/outbox';
import { recordPaymentEvents, workerActor } from '@once/db/payment-events';
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
  observedCall,
  type ProcessorCall,
  takeCallEvents,
} from '../../processor/processor-call-log.ts';
import { whileRenewingLease } from '../../runtime/renew-lease.ts';
import { withDatabaseRetry } from '../../runtime/transient-database-error.ts';
import type { JobDeps, JobResult } from '../processor-action-job.ts';
import {
  type AdoptedIntentHistory,
  mayHaveAdoptedHistory,
  outcomeOfAdoptedIntent,
  readAdoptedIntentHistory,
} from './adopted-intent-history.ts';
import { recordChargeOutcome } from './record-charge-outcome.ts';
import { recordPaymentIntentId } from './record-payment-intent.ts';

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

/** Step A's recovery point could not be written: another worker holds the job now. */
const LEASE_LOST = Symbol('lease_lost');

/** What the calls of one attempt found, with the history of an intent taken over. */
interface ChargeAttempt {
  outcome: ChargeOutcome;
  adopted?: AdoptedIntentHistory;
}

/**
 * Runs one claimed charge job, top to bottom like the protocol (the two-step charge,
 * docs/decisions/0009-two-step-charge.md):
 * 1. read the payment, its recorded PaymentIntent (if any) and the tenant's processor key;
 * 2. give up without calling if the job already used all its attempts (it keeps killing
 *    or stalling its workers) or its payment is already settled;
 * 3. if no intent is recorded: adopt one found by metadata (this payment's, or an earlier
 *    payment's of the same checkout whose row was lost), or create one WITHOUT
 *    confirming it (the payment's downstream key), and record its id under the job's
 *    lock token (a recovery point); if one is recorded: retrieve it (strongly consistent)
 *    and act on its status: a final state is recorded as it is, in-flight waits;
 * 4. confirm that one intent (its own derived key, the `return_url` of a 3-D Secure
 *    challenge). An intent charges at most once, so a confirm re-sent late, after the
 *    processor forgot its key, cannot charge twice. A card that needs the challenge answers
 *    `requires_action`: recorded with the challenge URL, and the job ends (the shopper's turn);
 *    an intent made for an earlier payment of the checkout that charged or was canceled is
 *    read again with its refunds: what happened to it after the charge (a capture, a void)
 *    was lost with that payment's rows;
 * 5. record the outcome (and that history) and finish the job in one transaction guarded by
 *    the lock token.
 * The lease is renewed while the processor is being called.
 */
export async function chargePayment(
  job: ClaimedJob<'charge_payment'>,
  deps: JobDeps,
): Promise<JobResult> {
  const { sql, log } = deps;
  const retry = { log, what: `job ${job.id}`, onHang: deps.onDatabaseHang };

  // 1. What to charge, and with whose key.
  const target = await withDatabaseRetry(() => loadChargeTarget(sql, job), retry);
  if (!target) {
    const finished = await withDatabaseRetry(
      () => finishJob(sql, job, 'dead', 'payment_not_found'),
      retry,
    );
    return finished ? { job: 'skipped', reason: 'payment_not_found' } : { job: 'lease_lost' };
  }

  // 2. Nothing to do, or nothing more we are allowed to do. Only the processor's word
  // settles a payment: this worker's answers, the reconciler's ledger, or a webhook for the
  // intent recorded here as the processor returns it when asked (never an event's body), so
  // a payment settled elsewhere was really charged or declined.
  if (target.status !== 'processing' && target.status !== 'unknown') {
    // Recorded with the finish, so the payment's timeline shows how the job ended.
    const finished = await withDatabaseRetry(
      () =>
        sql.begin(async (tx) => {
          if (!(await finishJob(tx, job, 'done', `already_${target.status}`))) return false;
          await recordPaymentEvents(tx, [
            {
              tenantId: job.tenantId,
              paymentId: job.paymentId,
              actor: workerActor(job.lockedBy),
              kind: 'job.finished',
              detail: { job: job.id, attempt: job.attempts, paymentWas: target.status },
            },
          ]);
          return true;
        }),
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

  // Every processor call, recorded as an event with what the worker made of it.
  const calls: ProcessorCall[] = [];
  // 3 and 4. The calls to the processor.
  const processor = deps.processorFor(target.processor_secret_key);
  const attempt = await whileRenewingLease(job, deps, () =>
    chargeInTwoSteps(
      processor,
      job,
      target,
      calls,
      (intentId) => {
        const events = takeCallEvents(job, calls);
        return withDatabaseRetry(() => recordPaymentIntentId(sql, job, intentId, events), retry);
      },
      deps.returnUrl,
    ),
  );
  if (attempt === LEASE_LOST) {
    log('charge.intent_not_recorded', { job: job.id, payment: job.paymentId });
    return { job: 'lease_lost' };
  }
  const { outcome, adopted } = attempt;
  log('charge.attempted', {
    job: job.id,
    payment: job.paymentId,
    attempt: job.attempts,
    outcome: outcome.kind,
    detail: 'reason' in outcome ? outcome.reason : 'code' in outcome ? outcome.code : undefined,
  });

  // 5. Record it, or nothing if our lease was taken over.
  const events = takeCallEvents(job, calls);
  return withDatabaseRetry(
    () => recordChargeOutcome(sql, job, outcome, deps.backoff, events, adopted),
    retry,
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
    if (!mayHaveAdoptedHistory(intent, outcome.kind, job.paymentId)) return { outcome };
    const adopted = await readAdoptedIntentHistory(processor, intent.id, calls);
    return { outcome: outcomeOfAdoptedIntent(outcome, adopted), adopted };
  } catch (error) {
    return { outcome: outcomeOfChargeError(error) };
  }
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
