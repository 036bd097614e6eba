import { type BackoffPolicy, equalJitterDelayMs } from '@once/backoff';
import { type ChargePaymentPayload, enqueueOutboxJob, isLiveJob } from '@once/db/outbox';
import { type PaymentEventInput, recordPaymentEvents } from '@once/db/payment-events';
import { newJobId, type PaymentSettlement, settlePayment } from '@once/payments';
import { msInterval, runStatement } from '@once/postgres/sql';
import { sql as drizzleSql } from 'drizzle-orm';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import {
  type AdoptedIntentHistory,
  isEarlierPaymentsIntent,
  mayHaveHistory,
  readAdoptedIntentHistory,
  recordAdoptedIntentHistory,
} from '../jobs/charge/adopted-intent-history.ts';
import { cancelIntent } from '../processor/cancel-intent.ts';
import { isUnexpectedIntentState, settledOutcomeOf } from '../processor/charge-outcome.ts';
import { findPaymentIntentByMetadata } from '../processor/find-payment-intent.ts';
import type { Log } from '../runtime/logger.ts';
import { reconcileAuthorizations } from './reconcile-authorizations.ts';
import { reconcileChallenges } from './reconcile-three-d-secure.ts';
import { isUnsettled } from './unsettled-statuses.ts';

export interface ReconcileOptions {
  sql: postgres.Sql;
  processorFor: (secretKey: string) => Stripe;
  log: Log;
  /** Only payments unsettled for at least this long (and with no live job) are looked at. */
  olderThanMs: number;
  /**
   * Re-enqueues of a charge that was never confirmed, before the reconciler stops trying:
   * it then cancels the intent (proof of no charge) or, with no intent recorded, settles
   * `failed` (no confirm was ever sent).
   */
  maxRequeues: number;
  /** Payments looked at per pass, shared fairly between tenants. */
  batchSize?: number;
  /** Next check of an undecided payment: backoff by its number of checks (default 1 min .. 1 h). */
  recheckBackoff?: BackoffPolicy;
  /** Undecided after this many checks = stuck: counted in the summary and logged. */
  stuckAfterChecks?: number;
  /** NOTIFY the dispatchers of a re-enqueued charge (default true); false: they poll. */
  notify?: boolean;
  /**
   * A payment left `requires_action` (its 3-D Secure challenge unanswered) this long is
   * abandoned: its intent is canceled and the payment `canceled` (default 15 min).
   */
  challengeAbandonAfterMs?: number;
  /**
   * Next look at a challenge still unanswered (default 5 s doubling to 1 min): a shopper
   * back from the bank waits on it when the webhook is lost, so it starts short.
   */
  challengeRecheckBackoff?: BackoffPolicy;
  /**
   * Next look at an authorisation still held (default 1 min doubling to 1 h): the processor
   * ends an uncaptured one by itself after its window, and the webhook saying so may be lost.
   */
  authorizationRecheckBackoff?: BackoffPolicy;
}

export interface ReconcileSummary {
  examined: number;
  succeeded: number;
  /**
   * Manual-capture payments found authorised (`requires_capture`), or found canceled after an
   * authorisation (an earlier payment's intent, taken over: settled `voided`).
   */
  authorized: number;
  declined: number;
  requeued: number;
  failed: number;
  /** Still undecided (lookup refused, intent in flight): checked again later, with backoff. */
  left: number;
  /** Unsettled payments (all tenants) that stayed undecided `stuckAfterChecks` times or more. */
  stuck: number;
  /** Payments waiting for a 3-D Secure answer moved on by the processor's state of their intent. */
  challengesSettled: number;
  /** Challenges abandoned: intent canceled, payment `canceled`. */
  challengesCanceled: number;
  /** Challenges still waiting for the shopper (or not looked up): looked at again later. */
  challengesWaiting: number;
  /** Authorisations the processor ended uncaptured (expired): settled `voided`. */
  authorizationsEnded: number;
}

const DEFAULT_RECHECK_BACKOFF: BackoffPolicy = { baseMs: 60_000, maxMs: 60 * 60_000 };
const DEFAULT_STUCK_AFTER_CHECKS = 5;
const DEFAULT_CHALLENGE_ABANDON_AFTER_MS = 15 * 60_000;
const DEFAULT_CHALLENGE_RECHECK_BACKOFF: BackoffPolicy = { baseMs: 5_000, maxMs: 60_000 };
const DEFAULT_AUTHORIZATION_RECHECK_BACKOFF: BackoffPolicy = {
  baseMs: 60_000,
  maxMs: 60 * 60_000,
};

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

/** What the processor proves about one payment. */
type LedgerAnswer =
  | { found: 'succeeded'; intentId: string }
  /** A manual-capture intent holds the funds: the charge's answer, the capture is an operator's. */
  | { found: 'authorized'; intentId: string }
  | { found: 'declined'; intentId: string; code: string; message?: string }
  /** The intent was canceled before any charge: proof that nobody was charged. */
  | { found: 'canceled'; intentId: string }
  /** The confirm asked for 3-D Secure: the shopper's turn (the challenge pass follows it). */
  | { found: 'requires_action'; intentId: string; nextActionUrl: string | null }
  /** The shopper failed the challenge: nothing charged, nothing re-confirmed. */
  | { found: 'authentication_failed'; intentId: string; code: string; message?: string }
  | { found: 'in_flight'; intentId: string }
  /** An intent that was never confirmed (or whose confirm has not arrived yet). */
  | { found: 'unconfirmed'; intentId: string }
  /** No intent recorded and none found: no confirm was ever sent for this payment. */
  | { found: 'never_sent' };

/**
 * One pass of the reconciler. For each payment stuck in `unknown` (retries exhausted) or
 * `processing` (no live job left) it asks the processor and acts only on proof:
 * - an intent recorded by id is RETRIEVED (strongly consistent): succeeded -> `succeeded`,
 *   authorised (manual capture) -> `authorized`, declined -> `declined`, canceled -> `failed`,
 *   waiting for 3-D Secure -> `requires_action` with its challenge URL, authentication
 *   failed -> `failed`, processing -> check again later;
 * - an intent still waiting for its confirm -> enqueue the charge again (the job confirms
 *   it with its own key), at most `maxRequeues` times; then CANCEL it: only a cancel the
 *   processor accepted settles `failed` (a refused cancel means it charged: read again);
 * - no intent recorded: the two-step charge confirms only recorded intents, so no confirm
 *   was ever sent and nobody was charged. A search adopts an intent a lost create made;
 *   finding nothing re-enqueues (same keys), and after `maxRequeues` settles `failed`;
 * - an intent made for an earlier payment of the checkout (its row lost) that charged brings
 *   its capture or void and its refunds, recorded with the settlement
 *   (`recordAdoptedIntentHistory`): one authorised, then voided, settles `voided`, not `failed`.
 * Undecided payments get a next-check time with backoff, and each tenant gets a fair
 * share of a pass (round robin by age), so one tenant whose lookups fail (a rotated
 * processor key) cannot stall everybody. Every settle is guarded (terminal states never
 * move) and re-enqueues re-check under a row lock, so several workers can reconcile at once.
 * The same pass then looks at payments waiting for a 3-D Secure answer
 * (`reconcileChallenges`): settled from the processor, or canceled once abandoned; and at
 * authorised payments (`reconcileAuthorizations`): one the processor ended uncaptured (its
 * window passed) is settled `voided`.
 *
 * @example
 * const summary = await reconcilePayments({ sql, processorFor, log, olderThanMs: 60_000, maxRequeues: 3 });
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
  const candidates = await dueCandidates(sql, options);

  for (const payment of candidates) {
    summary.examined++;
    const processor = options.processorFor(payment.processor_secret_key);
    let answer: LedgerAnswer;
    let adopted: AdoptedIntentHistory | undefined;
    try {
      const asked = await askProcessor(processor, payment);
      answer = asked.answer;
      if (
        mayHaveHistory(answer.found) &&
        asked.intent &&
        isEarlierPaymentsIntent(asked.intent, payment.id)
      ) {
        adopted = await readAdoptedIntentHistory(processor, asked.intent.id, []);
      }
    } catch (error) {
      log('reconcile.lookup_failed', {
        tenant: payment.tenant_id,
        payment: payment.id,
        error: String(error),
      });
      await checkAgainLater(sql, payment, options, { found: 'lookup_failed' });
      summary.left++;
      continue;
    }
    if (!payment.processor_payment_intent_id && answer.found !== 'never_sent') {
      // A lost create's intent, found by search: from now on it is THE intent, by id.
      if (!(await adoptIntent(sql, payment, answer))) {
        summary.left++;
        continue;
      }
    }

    switch (answer.found) {
      case 'succeeded':
      case 'authorized': {
        // A captured authorisation taken over is `authorized`, then `captured` (its history).
        const status =
          answer.found === 'authorized' || adopted?.capturedAmount != null
            ? 'authorized'
            : 'succeeded';
        await settleWithProof(
          sql,
          payment,
          answer,
          { status, processorPaymentIntentId: answer.intentId },
          adopted,
        );
        if (answer.found === 'succeeded') summary.succeeded++;
        else summary.authorized++;
        break;
      }
      case 'declined':
        await settleWithProof(sql, payment, answer, {
          status: 'declined',
          processorPaymentIntentId: answer.intentId,
          code: answer.code,
          message: answer.message,
        });
        summary.declined++;
        break;
      case 'canceled':
        if (adopted?.voided) {
          // Authorised, then voided: `authorized`, then `voided` by its history.
          await settleWithProof(
            sql,
            payment,
            answer,
            { status: 'authorized', processorPaymentIntentId: answer.intentId },
            adopted,
          );
          summary.authorized++;
          break;
        }
        await settleWithProof(sql, payment, answer, {
          status: 'failed',
          processorPaymentIntentId: answer.intentId,
          code: 'canceled_not_charged',
          message: `the processor canceled ${answer.intentId} before any charge`,
        });
        summary.failed++;
        break;
      case 'requires_action':
        await settleWithProof(sql, payment, answer, {
          status: 'requires_action',
          processorPaymentIntentId: answer.intentId,
          nextActionUrl: answer.nextActionUrl,
        });
        summary.left++;
        break;
      case 'authentication_failed':
        await settleWithProof(sql, payment, answer, {
          status: 'failed',
          processorPaymentIntentId: answer.intentId,
          code: answer.code,
          message: answer.message,
        });
        summary.failed++;
        break;
      case 'in_flight':
        await checkAgainLater(sql, payment, options, answer);
        summary.left++;
        break;
      case 'unconfirmed':
      case 'never_sent':
        if (payment.jobs - 1 < options.maxRequeues) {
          if (await requeueCharge(sql, payment, answer, options.notify !== false)) {
            summary.requeued++;
          } else summary.left++;
        } else if (answer.found === 'unconfirmed') {
          const settled = await cancelAndSettle(processor, sql, payment, answer.intentId, log);
          if (settled) summary.failed++;
          else {
            await checkAgainLater(sql, payment, options, answer);
            summary.left++;
          }
        } else if (await settleNeverSent(sql, payment)) {
          summary.failed++;
        } else {
          summary.left++;
        }
        break;
    }
    log('reconcile.settled', { payment: payment.id, was: payment.status, found: answer.found });
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
    recheckBackoff: options.authorizationRecheckBackoff ?? DEFAULT_AUTHORIZATION_RECHECK_BACKOFF,
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

/**
 * Due payments, a fair share per tenant: each tenant's due payments are numbered oldest
 * first, and the pass takes every tenant's first, then every tenant's second, and so on.
 */
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

async function askProcessor(
  processor: Stripe,
  payment: Candidate,
): Promise<{ answer: LedgerAnswer; intent: Stripe.PaymentIntent | null }> {
  const intent = payment.processor_payment_intent_id
    ? await processor.paymentIntents.retrieve(payment.processor_payment_intent_id)
    : await findPaymentIntentByMetadata(
        processor,
        payment.tenant_id,
        { paymentId: payment.id, downstreamKey: payment.downstream_key },
        payment,
      );
  return { answer: ledgerAnswerOf(intent), intent };
}

/** What an intent (or none found) proves about a payment. */
function ledgerAnswerOf(intent: Stripe.PaymentIntent | null): LedgerAnswer {
  if (!intent) return { found: 'never_sent' };
  const outcome = settledOutcomeOf(intent);
  if (!outcome) return { found: 'unconfirmed', intentId: intent.id };
  switch (outcome.kind) {
    case 'succeeded':
      return { found: 'succeeded', intentId: intent.id };
    case 'authorized':
      return { found: 'authorized', intentId: intent.id };
    case 'declined':
      return {
        found: 'declined',
        intentId: intent.id,
        code: outcome.code,
        message: outcome.message,
      };
    case 'canceled':
      return { found: 'canceled', intentId: intent.id };
    case 'requires_action':
      return {
        found: 'requires_action',
        intentId: intent.id,
        nextActionUrl: outcome.nextActionUrl,
      };
    case 'authentication_failed':
      return {
        found: 'authentication_failed',
        intentId: intent.id,
        code: outcome.code,
        message: outcome.message,
      };
    default:
      return { found: 'in_flight', intentId: intent.id };
  }
}

/**
 * Runs one decision's writes and, if they changed anything, records it as a
 * `reconciler.decided` event in the same transaction: the timeline shows a decision if and
 * only if it took effect. `lookup` is how the processor was asked (an arrow to its lane).
 */
async function decided(
  sql: postgres.Sql,
  payment: Candidate,
  decision: Record<string, unknown>,
  write: (tx: postgres.TransactionSql) => Promise<boolean>,
): Promise<boolean> {
  return sql.begin(async (tx) => {
    if (!(await write(tx))) return false;
    await recordPaymentEvents(tx, [reconcilerEvent(payment, decision)]);
    return true;
  });
}

/** A `reconciler.decided` event: how the processor was asked (an arrow), what it said, what was done. */
function reconcilerEvent(payment: Candidate, decision: Record<string, unknown>): PaymentEventInput {
  return {
    tenantId: payment.tenant_id,
    paymentId: payment.id,
    actor: 'reconciler',
    kind: 'reconciler.decided',
    detail: {
      to: 'processor',
      lookup: payment.processor_payment_intent_id ? 'retrieve' : 'search',
      was: payment.status,
      ...decision,
    },
  };
}

/**
 * Settles on the processor's proof (a final intent state); terminal payments never move. An
 * intent taken over from an earlier payment brings its history in the same transaction.
 */
async function settleWithProof(
  sql: postgres.Sql,
  payment: Candidate,
  answer: LedgerAnswer,
  settlement: PaymentSettlement,
  adopted?: AdoptedIntentHistory,
): Promise<boolean> {
  const ref = { tenantId: payment.tenant_id, paymentId: payment.id };
  // `adopted` is filled in by the write, before `decided` records the decision.
  const decision: Record<string, unknown> = { found: answer.found, decision: settlement.status };
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
  answer: Exclude<LedgerAnswer, { found: 'never_sent' }>,
): Promise<boolean> {
  const intentId = answer.intentId;
  const adopted = await decided(
    sql,
    payment,
    { found: answer.found, decision: 'adopt_intent', intent: intentId },
    async (tx) => {
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
    },
  );
  if (adopted) payment.processor_payment_intent_id = intentId;
  return adopted;
}

/**
 * Gives up on an intent that was never confirmed, with proof: the processor cancels it
 * (serialised with any confirm still on its way, by the intent's row lock), and only then
 * is the payment `failed`. A refused cancel (it succeeded or is processing) settles
 * nothing here; the next check reads the intent again.
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
  return decided(
    sql,
    payment,
    {
      found: 'unconfirmed',
      decision: 'cancel_then_failed',
      intent: intentId,
      cancelKey,
    },
    (tx) =>
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
async function settleNeverSent(sql: postgres.Sql, payment: Candidate): Promise<boolean> {
  return decided(sql, payment, { found: 'never_sent', decision: 'failed' }, (tx) =>
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

/** Moves an undecided payment back: its next check comes later with every check. */
async function checkAgainLater(
  sql: postgres.Sql,
  payment: Candidate,
  options: ReconcileOptions,
  answer: { found: string },
): Promise<void> {
  const delayMs = equalJitterDelayMs(
    payment.reconcile_checks + 1,
    options.recheckBackoff ?? DEFAULT_RECHECK_BACKOFF,
  );
  const decision = {
    found: answer.found,
    decision: 'check_again_later',
    check: payment.reconcile_checks + 1,
    retryInMs: delayMs,
  };
  await decided(sql, payment, decision, async (tx) => {
    const rows = await runStatement(
      tx,
      drizzleSql`
      update payments
      set reconcile_after = now() + ${msInterval(delayMs)},
          reconcile_checks = reconcile_checks + 1
      where tenant_id = ${payment.tenant_id} and id = ${payment.id}
        and ${isUnsettled('status')}
      returning id`,
    );
    return rows.length === 1;
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
 * Enqueues the charge again, with the payment's own downstream key, and puts the payment
 * back to `processing`, in one transaction that first locks the payment row and only then
 * re-checks that it is still unsettled and still has no live job. The counts are read by a
 * statement issued after the lock is held: under READ COMMITTED a sub-select of the locking
 * statement itself keeps the snapshot taken before its wait, so it would miss the job another
 * reconciler enqueued (and committed) while this one waited, and enqueue a second.
 */
async function requeueCharge(
  sql: postgres.Sql,
  payment: Candidate,
  answer: LedgerAnswer,
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
      reconcilerEvent(payment, {
        found: answer.found,
        decision: 'requeue_charge',
        jobs: payment.jobs + 1,
      }),
    ]);
    return true;
  });
}
