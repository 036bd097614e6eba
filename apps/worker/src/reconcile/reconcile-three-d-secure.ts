import { type BackoffPolicy, equalJitterDelayMs } from '@once/backoff';
import { type PaymentSettlement, settlePayment } from '@once/payments';
import { runStatement } from '@once/postgres/sql';
import { sql as drizzleSql } from 'drizzle-orm';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import { cancelIntent } from '../processor/cancel-intent.ts';
import {
  type ChargeOutcome,
  isDefinite,
  settledOutcomeOf,
  settlementOf,
} from '../processor/charge-outcome.ts';
import type { Log } from '../runtime/logger.ts';
import { checkAgainLater, decided } from './reconciler-decision.ts';

export interface ChallengeReconcileOptions {
  sql: postgres.Sql;
  processorFor: (secretKey: string) => Stripe;
  log: Log;
  /**
   * A payment left `requires_action` this long (since the challenge was asked for) is
   * abandoned: its intent is canceled, and the payment `canceled`.
   */
  abandonAfterMs: number;
  /** Next look at a challenge still unanswered: backoff by its number of checks, capped by the abandon time. */
  recheckBackoff: BackoffPolicy;
  /** Payments looked at per pass. */
  batchSize?: number;
}

export interface ChallengeReconcileSummary {
  examined: number;
  /** Moved on by what the processor holds (charged, authorised, declined, failed). */
  settled: number;
  /** Abandoned: intent canceled, payment `canceled`. */
  canceled: number;
  /** Still waiting for the shopper (or the processor could not be asked): checked again later. */
  left: number;
}

interface WaitingPayment {
  tenant_id: string;
  id: string;
  downstream_key: string;
  processor_payment_intent_id: string;
  processor_secret_key: string;
  reconcile_checks: number;
  /** How long ago the challenge was asked for (the payment entered `requires_action`). */
  waited_ms: number;
}

/**
 * The pass that guarantees a payment waiting for a 3-D Secure answer ends (the return page and
 * the webhook only learn sooner), from the recorded intent asked by id, never from the return
 * URL the browser carries. One still waiting past `abandonAfterMs` is canceled at the processor
 * with the payment's cancel key; only an accepted cancel settles `canceled` (a refused one means
 * the shopper answered meanwhile). Every settle is guarded, so whoever settles first wins.
 */
export async function reconcileChallenges(
  options: ChallengeReconcileOptions,
): Promise<ChallengeReconcileSummary> {
  const { sql, log } = options;
  const summary: ChallengeReconcileSummary = { examined: 0, settled: 0, canceled: 0, left: 0 };
  for (const payment of await waitingPayments(sql, options.batchSize ?? 100)) {
    summary.examined++;
    const processor = options.processorFor(payment.processor_secret_key);
    const intentId = payment.processor_payment_intent_id;
    let outcome: ChargeOutcome | null;
    try {
      outcome = settledOutcomeOf(await processor.paymentIntents.retrieve(intentId));
    } catch (error) {
      log('reconcile.challenge_lookup_failed', { payment: payment.id, error: String(error) });
      outcome = null;
    }
    const settlement = outcome ? challengeSettlementOf(outcome, intentId) : undefined;
    if (outcome && settlement) {
      if (await settle(sql, payment, outcome.kind, settlement)) summary.settled++;
      else summary.left++;
      continue;
    }
    const abandoned =
      outcome?.kind === 'requires_action' && payment.waited_ms >= options.abandonAfterMs;
    if (abandoned && (await cancelAbandoned(processor, sql, payment, log))) {
      summary.canceled++;
      continue;
    }
    // The next look: backoff by checks, but never later than the moment it counts as abandoned.
    const untilAbandoned = Math.max(0, options.abandonAfterMs - payment.waited_ms);
    const delayMs = Math.min(
      equalJitterDelayMs(payment.reconcile_checks + 1, options.recheckBackoff),
      Math.ceil(untilAbandoned),
    );
    await checkAgainLater(sql, payment, drizzleSql`status = 'requires_action'`, delayMs, {
      ...ASKED,
      found: outcome?.kind ?? 'lookup_failed',
    });
    summary.left++;
  }
  return summary;
}

/** How this pass asked the processor, as its `reconciler.decided` events say. */
const ASKED = { to: 'processor', lookup: 'retrieve', was: 'requires_action' } as const;

async function waitingPayments(sql: postgres.Sql, limit: number): Promise<WaitingPayment[]> {
  return runStatement<WaitingPayment>(
    sql,
    drizzleSql`
    select payment.tenant_id, payment.id, payment.downstream_key,
           payment.processor_payment_intent_id, payment.reconcile_checks,
           tenant.processor_secret_key,
           (extract(epoch from now() - payment.updated_at) * 1000)::float8 as waited_ms
    from payments as payment
    join tenants as tenant on tenant.id = payment.tenant_id
    where payment.status = 'requires_action'
      and payment.processor_payment_intent_id is not null
      and (payment.reconcile_after is null or payment.reconcile_after <= now())
    order by payment.updated_at
    limit ${limit}`,
  );
}

/**
 * Where the processor's state of the intent moves the payment; undefined: it does not yet.
 * Canceled is an abandoned challenge (an earlier cancel of ours whose answer was lost, or the
 * merchant's), not a charge canceled before its confirm.
 */
function challengeSettlementOf(
  outcome: ChargeOutcome,
  intentId: string,
): PaymentSettlement | undefined {
  if (outcome.kind === 'canceled') return abandonedSettlement(intentId);
  if (outcome.kind === 'requires_action' || !isDefinite(outcome)) return undefined;
  return settlementOf(outcome);
}

function abandonedSettlement(intentId: string): PaymentSettlement {
  return {
    status: 'canceled',
    processorPaymentIntentId: intentId,
    code: 'authentication_abandoned',
    message: `the 3-D Secure challenge was not answered; the processor canceled ${intentId} before any charge`,
  };
}

/** Settles and records the decision as a `reconciler.decided` event, in one transaction. */
function settle(
  sql: postgres.Sql,
  payment: WaitingPayment,
  found: string,
  settlement: PaymentSettlement,
  extra: Record<string, unknown> = {},
): Promise<boolean> {
  const detail = { ...ASKED, found, decision: settlement.status, ...extra };
  return decided(sql, payment, detail, (tx) =>
    settlePayment(tx, { tenantId: payment.tenant_id, paymentId: payment.id }, settlement),
  );
}

/** Cancels an abandoned challenge's intent; only the processor's `canceled` settles. */
async function cancelAbandoned(
  processor: Stripe,
  sql: postgres.Sql,
  payment: WaitingPayment,
  log: Log,
): Promise<boolean> {
  const intentId = payment.processor_payment_intent_id;
  const { canceled, cancelKey, error } = await cancelIntent(
    processor,
    intentId,
    payment.downstream_key,
  );
  if (error !== undefined) {
    // Refused (the shopper answered meanwhile) or no answer: the next look reads the intent.
    log('reconcile.challenge_cancel_refused', {
      payment: payment.id,
      intent: intentId,
      error: String(error),
    });
  }
  if (!canceled) return false;
  return settle(sql, payment, 'requires_action', abandonedSettlement(intentId), {
    intent: intentId,
    cancelKey,
    waitedMs: Math.round(payment.waited_ms),
  });
}
