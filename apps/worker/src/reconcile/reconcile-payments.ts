import type { BackoffPolicy } from '@once/backoff';
import { type ChargePaymentPayload, enqueueOutboxJob, isLiveJob } from '@once/db/outbox';
import { newJobId, settlePayment } from '@once/payments';
import { msInterval, runStatement } from '@once/postgres/sql';
import { sql as drizzleSql } from 'drizzle-orm';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import {
  type AdoptedIntentHistory,
  outcomeOfAdoptedIntent,
  readAdoptedIntentHistory,
  recordAdoptedIntentHistory,
} from '../jobs/charge/adopted-intent-history.ts';
import {
  type ChargeOutcome,
  isDefinite,
  isUnexpectedIntentState,
  settledOutcomeOf,
  settlementOf,
} from '../processor/charge-outcome.ts';
import { findPaymentIntentByMetadata } from '../processor/find-payment-intent.ts';
import { reconcileAuthorizations } from './reconcile-authorizations.ts';
import { reconcileChallenges } from './reconcile-three-d-secure.ts';
import {
  cancelThenSettle,
  checkAgainLater,
  decided,
  isUnsettled,
  type ReconcileOptions,
  type ReconcileSummary,
  settleDecided,
} from './reconciler-decision.ts';

const DEFAULT_RECHECK_BACKOFF: BackoffPolicy = { baseMs: 60_000, maxMs: 60 * 60_000 };
const DEFAULT_STUCK_AFTER_CHECKS = 5;

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
 * One pass of the reconciler over payments stuck in `unknown` or `processing` with no live
 * job, acting only on proof: a recorded intent is retrieved, a missing one searched for and
 * adopted; one never confirmed, or none at all, is re-enqueued up to `maxRequeues` times, then
 * canceled or settled `failed`. Tenants share a pass fairly, and every write is guarded, so
 * several workers can reconcile at once. Challenges and authorisations follow.
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
    let outcome: ChargeOutcome | null = null;
    let adopted: AdoptedIntentHistory | undefined;
    try {
      // A recorded intent is asked by id (a complete answer); a missing one is searched for.
      const recorded = payment.processor_payment_intent_id;
      intent = recorded
        ? await processor.paymentIntents.retrieve(recorded)
        : await findPaymentIntentByMetadata(
            processor,
            payment.tenant_id,
            { paymentId: payment.id, downstreamKey: payment.downstream_key },
            payment,
          );
      outcome = intent && settledOutcomeOf(intent);
      if (intent && outcome) {
        adopted = await readAdoptedIntentHistory(processor, intent, outcome.kind, payment.id, []);
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

  await reconcileChallenges(options, summary);
  await reconcileAuthorizations(options, summary);

  const afterChecks = options.stuckAfterChecks ?? DEFAULT_STUCK_AFTER_CHECKS;
  const [stuck] = await runStatement<{ n: number }>(
    sql,
    drizzleSql`
    select count(*)::int as n from payments
    where ${isUnsettled('status')} and reconcile_checks >= ${afterChecks}`,
  );
  summary.stuck = stuck?.n ?? 0;
  if (summary.stuck > 0) log('reconcile.stuck', { payments: summary.stuck, afterChecks });
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

async function decide(
  processor: Stripe,
  payment: Candidate,
  intent: Stripe.PaymentIntent | null,
  outcome: ChargeOutcome | null,
  found: string,
  adopted: AdoptedIntentHistory | undefined,
  options: ReconcileOptions,
): Promise<Counted> {
  const { sql } = options;
  if (outcome && isDefinite(outcome)) {
    // Taken over: a captured authorisation is `authorized`, then `captured` by its history;
    // one authorised, then voided, is `authorized`, then `voided` (not canceled uncharged).
    const proven = adopted ? outcomeOfAdoptedIntent(outcome, adopted) : outcome;
    const history = proven.kind === 'canceled' ? undefined : adopted;
    const settlement = settlementOf(proven);
    const ref = { tenantId: payment.tenant_id, paymentId: payment.id };
    // The history is settled in the same transaction and named in the decision's event.
    const detail: Record<string, unknown> = {
      ...asked(payment),
      found,
      decision: settlement.status,
    };
    await decided(sql, payment, detail, async (tx) => {
      if (!(await settlePayment(tx, ref, settlement))) return false;
      if (history) detail.adopted = await recordAdoptedIntentHistory(tx, ref, history);
      return true;
    });
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
  if (!intent) {
    // Only while no intent is recorded (no confirm was ever sent) and no job is live,
    // re-checked under the payment's row lock.
    const failed = await settleDecided(
      sql,
      payment,
      { ...asked(payment), found: 'never_sent' },
      {
        status: 'failed',
        code: 'not_charged',
        message: `no charge was ever confirmed after ${payment.jobs} enqueued attempts`,
      },
      { onlyIfNeverSent: true },
    );
    return failed ? 'failed' : 'left';
  }
  // Only a cancel the processor accepted (serialised with any confirm on its way) settles.
  const canceled = await cancelThenSettle(options, processor, payment, intent.id, {
    refusedLog: 'reconcile.cancel_refused',
    refusedFields: (error) => ({ charged: isUnexpectedIntentState(error) ? 'maybe' : 'unknown' }),
    detail: { ...asked(payment), found: 'unconfirmed', decision: 'cancel_then_failed' },
    settlement: {
      status: 'failed',
      processorPaymentIntentId: intent.id,
      code: 'canceled_not_charged',
      message: `the processor canceled ${intent.id} after ${payment.jobs} enqueued attempts`,
    },
  });
  if (canceled) return 'failed';
  await recheckLater(sql, payment, options, found);
  return 'left';
}

/** How this pass asked the processor about the payment, as its decisions' events say. */
function asked(payment: Candidate): Record<string, unknown> {
  const lookup = payment.processor_payment_intent_id ? 'retrieve' : 'search';
  return { to: 'processor', lookup, was: payment.status };
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

function recheckLater(
  sql: postgres.Sql,
  payment: Candidate,
  options: ReconcileOptions,
  found: string,
): Promise<void> {
  const backoff = options.recheckBackoff ?? DEFAULT_RECHECK_BACKOFF;
  return checkAgainLater(sql, payment, isUnsettled('status'), backoff, {
    ...asked(payment),
    found,
  });
}

/**
 * Re-checks after locking the payment row, in a second statement: under READ COMMITTED a
 * sub-select of the locking statement keeps its pre-wait snapshot and would miss a job
 * another reconciler enqueued meanwhile.
 */
function requeueCharge(
  sql: postgres.Sql,
  payment: Candidate,
  found: string,
  notify: boolean,
): Promise<boolean> {
  const detail = { ...asked(payment), found, decision: 'requeue_charge', jobs: payment.jobs + 1 };
  return decided(sql, payment, detail, async (tx) => {
    const [locked] = await runStatement(
      tx,
      drizzleSql`
      select id from payments
      where tenant_id = ${payment.tenant_id} and id = ${payment.id} and ${isUnsettled('status')}
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
      select count(*)::int as jobs, (count(*) filter (where ${isLiveJob('job')}))::int as live,
             (array_agg(job.payload order by job.created_at desc))[1] as payload
      from outbox_jobs as job
      where job.tenant_id = ${payment.tenant_id} and job.payment_id = ${payment.id}`,
    );
    if (!current || current.live > 0 || current.jobs !== payment.jobs) return false;
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
    const ref = { tenantId: payment.tenant_id, paymentId: payment.id };
    await settlePayment(tx, ref, { status: 'processing' });
    return true;
  });
}
