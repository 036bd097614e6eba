import type { BackoffPolicy } from '@once/backoff';
import type { PaymentSettlement } from '@once/payments';
import { runStatement } from '@once/postgres/sql';
import { sql as drizzleSql } from 'drizzle-orm';
import type postgres from 'postgres';
import {
  type ChargeOutcome,
  isDefinite,
  settledOutcomeOf,
  settlementOf,
} from '../processor/charge-outcome.ts';
import {
  cancelThenSettle,
  checkAgainLater,
  type ReconcileOptions,
  type ReconcileSummary,
  settleDecided,
} from './reconciler-decision.ts';

const DEFAULT_ABANDON_AFTER_MS = 15 * 60_000;
const DEFAULT_RECHECK_BACKOFF: BackoffPolicy = { baseMs: 5_000, maxMs: 60_000 };

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

/** How this pass asked the processor, as its `reconciler.decided` events say. */
const ASKED = { to: 'processor', lookup: 'retrieve', was: 'requires_action' } as const;

/**
 * The pass that guarantees a payment waiting for a 3-D Secure answer ends (the return page and
 * the webhook only learn sooner), from the recorded intent asked by id, never from the return
 * URL the browser carries. One still waiting past `challengeAbandonAfterMs` is canceled at the
 * processor; only an accepted cancel settles `canceled` (a refused one means the shopper
 * answered meanwhile). Every settle is guarded, so whoever settles first wins.
 */
export async function reconcileChallenges(
  options: ReconcileOptions,
  summary: ReconcileSummary,
): Promise<void> {
  const { sql, log } = options;
  const abandonAfterMs = options.challengeAbandonAfterMs ?? DEFAULT_ABANDON_AFTER_MS;
  for (const payment of await waitingPayments(sql, options.batchSize ?? 100)) {
    summary.examined++;
    const processor = options.processorFor(payment.processor_secret_key);
    const intentId = payment.processor_payment_intent_id;
    const intent = await processor.paymentIntents.retrieve(intentId).catch((error: unknown) => {
      log('reconcile.challenge_lookup_failed', { payment: payment.id, error: String(error) });
      return undefined;
    });
    const outcome = intent ? settledOutcomeOf(intent) : null;
    const settlement = outcome ? challengeSettlementOf(outcome, intentId) : undefined;
    if (outcome && settlement) {
      const detail = { ...ASKED, found: outcome.kind };
      const settled = await settleDecided(sql, payment, detail, settlement);
      summary[settled ? 'challengesSettled' : 'challengesWaiting']++;
      continue;
    }
    const abandoned = outcome?.kind === 'requires_action' && payment.waited_ms >= abandonAfterMs;
    if (
      abandoned &&
      (await cancelThenSettle(options, processor, payment, intentId, {
        refusedLog: 'reconcile.challenge_cancel_refused',
        detail: { ...ASKED, found: 'requires_action', waitedMs: Math.round(payment.waited_ms) },
        settlement: abandonedSettlement(intentId),
      }))
    ) {
      summary.challengesCanceled++;
      continue;
    }
    // The next look: backoff by checks, but never later than the moment it counts as abandoned.
    await checkAgainLater(
      sql,
      payment,
      drizzleSql`status = 'requires_action'`,
      options.challengeRecheckBackoff ?? DEFAULT_RECHECK_BACKOFF,
      { ...ASKED, found: outcome?.kind ?? 'lookup_failed' },
      Math.ceil(Math.max(0, abandonAfterMs - payment.waited_ms)),
    );
    summary.challengesWaiting++;
  }
}

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
