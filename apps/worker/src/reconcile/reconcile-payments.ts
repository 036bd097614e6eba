import { type BackoffPolicy, equalJitterDelayMs } from '@once/backoff';
import { type ChargePaymentPayload, enqueueOutboxJob, isLiveJob } from '@once/db/outbox';
import { recordPaymentEvents } from '@once/db/payment-events';
import { newJobId, type PaymentSettlement, settlePayment } from '@once/payments';
import { msInterval, runStatement } from '@once/postgres/sql';
import { sql as drizzleSql } from 'drizzle-orm';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import {
  type AdoptedIntentHistory,
  mayHaveAdoptedHistory,
  outcomeOfAdoptedIntent,
  readAdoptedIntentHistory,
  recordAdoptedIntentHistory,
} from '../jobs/charge/adopted-intent-history.ts';
import { cancelIntent } from '../processor/cancel-intent.ts';
import {
  type ChargeOutcome,
  isDefinite,
  isUnexpectedIntentState,
  settledOutcomeOf,
  settlementOf,
} from '../processor/charge-outcome.ts';
import { findPaymentIntentByMetadata } from '../processor/find-payment-intent.ts';
import type { Log } from '../runtime/logger.ts';
import { reconcileAuthorizations } from './reconcile-authorizations.ts';
import { reconcileChallenges } from './reconcile-three-d-secure.ts';
import { checkAgainLater, decided, reconcilerDecided } from './reconciler-decision.ts';
import { isUnsettled } from './unsettled-statuses.ts';

export interface ReconcileOptions {
  sql: postgres.Sql;
  processorFor: (secretKey: string) => Stripe;
  log: Log;
  /** Only payments unsettled for at least this long (and with no live job) are looked at. */
  olderThanMs: number;
  /** Re-enqueues of a never-confirmed charge before it is canceled (or settled `failed`). */
  maxRequeues: number;
  /** Payments looked at per pass, shared fairly between tenants. */
  batchSize?: number;
  /** Backoff of an undecided payment's next check, by its number of checks. */
  recheckBackoff?: BackoffPolicy;
  /** Undecided after this many checks = stuck: counted in the summary and logged. */
  stuckAfterChecks?: number;
  /** NOTIFY the dispatchers of a re-enqueued charge (default true); false: they poll. */
  notify?: boolean;
  /** A 3-D Secure challenge unanswered this long is abandoned: intent and payment canceled. */
  challengeAbandonAfterMs?: number;
  /** Starts short: a shopper back from the bank waits on it when the webhook is lost. */
  challengeRecheckBackoff?: BackoffPolicy;
}

export interface ReconcileSummary {
  examined: number;
  succeeded: number;
  /** Found authorised, or voided after an authorisation (an adopted intent). */
  authorized: number;
  declined: number;
  requeued: number;
  failed: number;
  /** Still undecided (lookup refused, intent in flight): checked again later. */
  left: number;
  /** Unsettled payments (all tenants) that stayed undecided `stuckAfterChecks` times or more. */
  stuck: number;
  challengesSettled: number;
  challengesCanceled: number;
  challengesWaiting: number;
  /** Authorisations the processor ended uncaptured (expired): settled `voided`. */
  authorizationsEnded: number;
}

const DEFAULT_RECHECK_BACKOFF: BackoffPolicy = { baseMs: 60_000, maxMs: 60 * 60_000 };
const DEFAULT_STUCK_AFTER_CHECKS = 5;
const DEFAULT_CHALLENGE_ABANDON_AFTER_MS = 15 * 60_000;
const DEFAULT_CHALLENGE_RECHECK_BACKOFF: BackoffPolicy = { baseMs: 5_000, maxMs: 60_000 };
/** The processor ends an uncaptured authorisation by itself, and that webhook may be lost. */
const AUTHORIZATION_RECHECK_BACKOFF: BackoffPolicy = { baseMs: 60_000, maxMs: 60 * 60_000 };

interface Candidate {
  tenant_id: string;
  id: string;
  status: 'processing' | 'unknown';
  amount: number;
  currency: string;
  downstream_key: string;
  processor_payment_intent_id: string | null;
  processor_secret_key: string;
  reconcile_checks: number;
  jobs: number;
}

/** The counts of {@link ReconcileSummary} one payment's decision adds to. */
type Counted = 'succeeded' | 'authorized' | 'declined' | 'requeued' | 'failed' | 'left';

/**
 * One pass of the reconciler over payments stuck in `unknown` or `processing` (no live job):
 * it asks the processor and acts only on proof. A recorded intent is retrieved (strongly
 * consistent) and a final state settles; a missing one is searched for and adopted. An
 * intent never confirmed, or none at all (only recorded intents are confirmed, so nobody was
 * charged), is re-enqueued up to `maxRequeues` times, then canceled (only an accepted cancel
 * settles `failed`) or settled `failed`. Each tenant gets a fair share of a pass, so one whose
 * lookups fail cannot stall everybody; every settle is guarded and re-enqueues re-check under
 * a row lock, so several workers can reconcile at once. Challenges and authorisations follow.
 */
export async function reconcilePayments(options: ReconcileOptions): Promise<ReconcileSummary> {
  const { sql, log } = options;
  const summary: ReconcileSummary = {
    examined: 0,
    succeeded: 0,
    authorized: 0,
    declined: 0,
    requeued: 0,
    failed: 0,
    left: 0,
    stuck: 0,
    challengesSettled: 0,
    challengesCanceled: 0,
    challengesWaiting: 0,
    authorizationsEnded: 0,
  };
  for (const payment of await dueCandidates(sql, options)) {
    summary.examined++;
    const processor = options.processorFor(payment.processor_secret_key);
    let intent: Stripe.PaymentIntent | null;
    let adopted: AdoptedIntentHistory | undefined;
    try {
      intent = await findIntent(processor, payment);
      const kind = intent && settledOutcomeOf(intent)?.kind;
      if (intent && kind && mayHaveAdoptedHistory(intent, kind, payment.id)) {
        adopted = await readAdoptedIntentHistory(processor, intent.id, []);
      }
    } catch (error) {
      log('reconcile.lookup_failed', {
        tenant: payment.tenant_id,
        payment: payment.id,
        error: String(error),
      });
      await recheckLater(sql, payment, options, 'lookup_failed');
      summary.left++;
      continue;
    }
    const outcome = intent && settledOutcomeOf(intent);
    // What the intent (or none found) proves: a state it cannot settle on is in flight.
    const found = !intent
      ? 'never_sent'
      : !outcome
        ? 'unconfirmed'
        : isDefinite(outcome)
          ? outcome.kind
          : 'in_flight';
    // A lost create's intent, found by search: from now on it is THE intent, by id.
    if (intent && !payment.processor_payment_intent_id) {
      if (!(await adoptIntent(sql, payment, found, intent.id))) {
        summary.left++;
        continue;
      }
    }
    summary[await decide(processor, payment, intent, outcome, found, adopted, options)]++;
    log('reconcile.settled', { payment: payment.id, was: payment.status, found });
  }

  const challenges = await reconcileChallenges({
    sql,
    processorFor: options.processorFor,
    log,
    abandonAfterMs: options.challengeAbandonAfterMs ?? DEFAULT_CHALLENGE_ABANDON_AFTER_MS,
    recheckBackoff: options.challengeRecheckBackoff ?? DEFAULT_CHALLENGE_RECHECK_BACKOFF,
    batchSize: options.batchSize,
  });
  summary.examined += challenges.examined;
  summary.challengesSettled = challenges.settled;
  summary.challengesCanceled = challenges.canceled;
  summary.challengesWaiting = challenges.left;

  const authorizations = await reconcileAuthorizations({
    sql,
    processorFor: options.processorFor,
    log,
    olderThanMs: options.olderThanMs,
    recheckBackoff: AUTHORIZATION_RECHECK_BACKOFF,
    batchSize: options.batchSize,
  });
  summary.examined += authorizations.examined;
  summary.authorizationsEnded = authorizations.ended;

  summary.stuck = await countStuck(sql, options.stuckAfterChecks ?? DEFAULT_STUCK_AFTER_CHECKS);
  if (summary.stuck > 0) {
    log('reconcile.stuck', {
      payments: summary.stuck,
      afterChecks: options.stuckAfterChecks ?? DEFAULT_STUCK_AFTER_CHECKS,
    });
  }
  return summary;
}

/** Due payments, round robin by age across tenants. */
async function dueCandidates(sql: postgres.Sql, options: ReconcileOptions): Promise<Candidate[]> {
  return runStatement<Candidate>(
    sql,
    drizzleSql`
    with due as (
      select payment.tenant_id, payment.id, payment.status, payment.amount, payment.currency,
             payment.downstream_key,
             payment.processor_payment_intent_id, payment.reconcile_checks,
             tenant.processor_secret_key,
             (select count(*)::int from outbox_jobs as job
               where job.tenant_id = payment.tenant_id and job.payment_id = payment.id) as jobs,
             coalesce(payment.reconcile_after, payment.updated_at) as due_at
      from payments as payment
      join tenants as tenant on tenant.id = payment.tenant_id
      where ${isUnsettled('payment.status')}
        and payment.updated_at < now() - ${msInterval(options.olderThanMs)}
        and (payment.reconcile_after is null or payment.reconcile_after <= now())
        and not exists (
          select 1 from outbox_jobs as job
          where job.tenant_id = payment.tenant_id and job.payment_id = payment.id
            and ${isLiveJob('job')})
    ), turns as (
      select due.*, row_number() over (partition by tenant_id order by due_at, id) as turn
      from due
    )
    select tenant_id, id, status, amount, currency, downstream_key, processor_payment_intent_id,
           reconcile_checks, processor_secret_key, jobs
    from turns
    order by turn, due_at, tenant_id
    limit ${options.batchSize ?? 100}`,
  );
}

async function findIntent(
  processor: Stripe,
  payment: Candidate,
): Promise<Stripe.PaymentIntent | null> {
  return payment.processor_payment_intent_id
    ? processor.paymentIntents.retrieve(payment.processor_payment_intent_id)
    : findPaymentIntentByMetadata(
        processor,
        payment.tenant_id,
        { paymentId: payment.id, downstreamKey: payment.downstream_key },
        payment,
      );
}

async function decide(
  processor: Stripe,
  payment: Candidate,
  intent: Stripe.PaymentIntent | null,
  outcome: ChargeOutcome | null,
  found: string,
  adopted: AdoptedIntentHistory | undefined,
  options: ReconcileOptions,
): Promise<Counted> {
  const { sql, log } = options;
  if (outcome && isDefinite(outcome)) {
    // Taken over: a captured authorisation is `authorized`, then `captured` by its history;
    // one authorised, then voided, is `authorized`, then `voided` (not canceled uncharged).
    const proven = adopted ? outcomeOfAdoptedIntent(outcome, adopted) : outcome;
    const history = proven.kind === 'canceled' ? undefined : adopted;
    const settlement = settlementOf(proven);
    await settleWithProof(sql, payment, found, settlement, history);
    if (outcome.kind === 'succeeded') return 'succeeded';
    return settlement.status === 'requires_action' ? 'left' : (settlement.status as Counted);
  }
  if (outcome) {
    await recheckLater(sql, payment, options, found);
    return 'left';
  }
  if (payment.jobs - 1 < options.maxRequeues) {
    return (await requeueCharge(sql, payment, found, options.notify !== false))
      ? 'requeued'
      : 'left';
  }
  if (!intent) return (await settleNeverSent(sql, payment)) ? 'failed' : 'left';
  if (await cancelAndSettle(processor, sql, payment, intent.id, log)) return 'failed';
  await recheckLater(sql, payment, options, found);
  return 'left';
}

/** How this pass asked the processor about the payment, as its decisions' events say. */
function asked(payment: Candidate): Record<string, unknown> {
  return {
    to: 'processor',
    lookup: payment.processor_payment_intent_id ? 'retrieve' : 'search',
    was: payment.status,
  };
}

/** An intent taken over from an earlier payment brings its history in the same transaction. */
function settleWithProof(
  sql: postgres.Sql,
  payment: Candidate,
  found: string,
  settlement: PaymentSettlement,
  adopted?: AdoptedIntentHistory,
): Promise<boolean> {
  const ref = { tenantId: payment.tenant_id, paymentId: payment.id };
  // `adopted` is filled in by the write, before `decided` records the decision.
  const decision: Record<string, unknown> = {
    ...asked(payment),
    found,
    decision: settlement.status,
  };
  return decided(sql, payment, decision, async (tx) => {
    if (!(await settlePayment(tx, ref, settlement))) return false;
    if (adopted) decision.adopted = await recordAdoptedIntentHistory(tx, ref, adopted);
    return true;
  });
}

/** Records an intent found by search, unless a different one is recorded meanwhile. */
async function adoptIntent(
  sql: postgres.Sql,
  payment: Candidate,
  found: string,
  intentId: string,
): Promise<boolean> {
  const detail = { ...asked(payment), found, decision: 'adopt_intent', intent: intentId };
  const adopted = await decided(sql, payment, detail, async (tx) => {
    const rows = await runStatement(
      tx,
      drizzleSql`
      update payments set processor_payment_intent_id = ${intentId}
      where tenant_id = ${payment.tenant_id} and id = ${payment.id}
        and ${isUnsettled('status')}
        and (processor_payment_intent_id is null or processor_payment_intent_id = ${intentId})
      returning id`,
    );
    return rows.length === 1;
  });
  if (adopted) payment.processor_payment_intent_id = intentId;
  return adopted;
}

/**
 * Only a cancel the processor accepted (serialised with any confirm on its way) settles
 * `failed`; a refused one settles nothing and the next check reads the intent again.
 */
async function cancelAndSettle(
  processor: Stripe,
  sql: postgres.Sql,
  payment: Candidate,
  intentId: string,
  log: Log,
): Promise<boolean> {
  const { canceled, cancelKey, error } = await cancelIntent(
    processor,
    intentId,
    payment.downstream_key,
  );
  if (error !== undefined) {
    log('reconcile.cancel_refused', {
      payment: payment.id,
      intent: intentId,
      error: String(error),
      charged: isUnexpectedIntentState(error) ? 'maybe' : 'unknown',
    });
  }
  if (!canceled) return false;
  const detail = {
    ...asked(payment),
    found: 'unconfirmed',
    decision: 'cancel_then_failed',
    intent: intentId,
    cancelKey,
  };
  return decided(sql, payment, detail, (tx) =>
    settlePayment(
      tx,
      { tenantId: payment.tenant_id, paymentId: payment.id },
      {
        status: 'failed',
        processorPaymentIntentId: intentId,
        code: 'canceled_not_charged',
        message: `the processor canceled ${intentId} after ${payment.jobs} enqueued attempts`,
      },
    ),
  );
}

/**
 * `failed` without a processor call: only while no intent is recorded (so no confirm was
 * ever sent) and no job is live, re-checked under the payment's row lock.
 */
function settleNeverSent(sql: postgres.Sql, payment: Candidate): Promise<boolean> {
  const detail = { ...asked(payment), found: 'never_sent', decision: 'failed' };
  return decided(sql, payment, detail, (tx) =>
    settlePayment(
      tx,
      { tenantId: payment.tenant_id, paymentId: payment.id },
      {
        status: 'failed',
        code: 'not_charged',
        message: `no charge was ever confirmed after ${payment.jobs} enqueued attempts`,
      },
      { onlyIfNeverSent: true },
    ),
  );
}

function recheckLater(
  sql: postgres.Sql,
  payment: Candidate,
  options: ReconcileOptions,
  found: string,
): Promise<void> {
  const delayMs = equalJitterDelayMs(
    payment.reconcile_checks + 1,
    options.recheckBackoff ?? DEFAULT_RECHECK_BACKOFF,
  );
  return checkAgainLater(sql, payment, isUnsettled('status'), delayMs, {
    ...asked(payment),
    found,
  });
}

async function countStuck(sql: postgres.Sql, afterChecks: number): Promise<number> {
  const [row] = await runStatement<{ n: number }>(
    sql,
    drizzleSql`
    select count(*)::int as n from payments
    where ${isUnsettled('status')} and reconcile_checks >= ${afterChecks}`,
  );
  return row?.n ?? 0;
}

/**
 * Re-checks after locking the payment row, in a second statement: under READ COMMITTED a
 * sub-select of the locking statement keeps its pre-wait snapshot and would miss a job
 * another reconciler enqueued meanwhile.
 */
async function requeueCharge(
  sql: postgres.Sql,
  payment: Candidate,
  found: string,
  notify: boolean,
): Promise<boolean> {
  return sql.begin(async (tx) => {
    const [locked] = await runStatement<{ status: string }>(
      tx,
      drizzleSql`
      select status from payments
      where tenant_id = ${payment.tenant_id} and id = ${payment.id}
      for update`,
    );
    if (!locked) return false;
    const [current] = await runStatement<{
      jobs: number;
      live: number;
      payload: ChargePaymentPayload | null;
    }>(
      tx,
      drizzleSql`
      select (select count(*)::int from outbox_jobs as job
               where job.tenant_id = ${payment.tenant_id} and job.payment_id = ${payment.id}) as jobs,
             (select count(*)::int from outbox_jobs as job
               where job.tenant_id = ${payment.tenant_id} and job.payment_id = ${payment.id}
                 and ${isLiveJob('job')}) as live,
             (select job.payload from outbox_jobs as job
               where job.tenant_id = ${payment.tenant_id} and job.payment_id = ${payment.id}
               order by job.created_at desc limit 1) as payload`,
    );
    if (!current || current.live > 0 || current.jobs !== payment.jobs) return false;
    if (locked.status !== 'processing' && locked.status !== 'unknown') return false;
    await enqueueOutboxJob(
      tx,
      {
        tenantId: payment.tenant_id,
        id: newJobId(),
        kind: 'charge_payment',
        paymentId: payment.id,
        downstreamKey: payment.downstream_key,
        // The payment's previous job's, as `pay` wrote it: the same payment method again.
        payload: current.payload ?? { amount: payment.amount, currency: payment.currency },
      },
      { notify },
    );
    await settlePayment(
      tx,
      { tenantId: payment.tenant_id, paymentId: payment.id },
      { status: 'processing' },
    );
    await recordPaymentEvents(tx, [
      reconcilerDecided(payment, {
        ...asked(payment),
        found,
        decision: 'requeue_charge',
        jobs: payment.jobs + 1,
      }),
    ]);
    return true;
  });
}
