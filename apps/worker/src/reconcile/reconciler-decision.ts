import { type BackoffPolicy, equalJitterDelayMs } from '@once/backoff';
import { recordPaymentEvents } from '@once/db/payment-events';
import {
  cancelKeyFor,
  type PaymentSettlement,
  settlePayment,
  unsettledPaymentStatuses,
} from '@once/payments';
import { msInterval, runStatement, sqlLiteralList } from '@once/postgres/sql';
import { sql as drizzleSql, type SQL } from 'drizzle-orm';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import type { Log } from '../runtime/logger.ts';

export interface ReconcileOptions {
  sql: postgres.Sql;
  processorFor: (secretKey: string) => Stripe;
  log: Log;
  /** Only payments unsettled for at least this long (and with no live job) are looked at. */
  olderThanMs: number;
  /** Re-enqueues of a never-confirmed charge before it is canceled (or settled `failed`). */
  maxRequeues: number;
  /** Payments looked at per pass and per kind, shared fairly between tenants. */
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
  /** Still waiting for the shopper (or the processor could not be asked): checked again later. */
  challengesWaiting: number;
  /** Authorisations the processor ended uncaptured (expired): settled `voided`. */
  authorizationsEnded: number;
}

/** A payment a reconciler pass looks at. */
export interface ReconciledPayment {
  tenant_id: string;
  id: string;
  reconcile_checks: number;
}

/**
 * `<column> in ('processing', 'unknown')`: the unsettled payment states (the reconciler's
 * work), spelled once from the state machine. Literals, not bind parameters: the planner can
 * match a partial index only against a predicate it can see, and `payments_status_updated_idx`
 * is defined with exactly this list.
 */
export function isUnsettled(column: string): SQL {
  return drizzleSql`${drizzleSql.raw(column)} in ${sqlLiteralList(unsettledPaymentStatuses)}`;
}

/**
 * Runs one decision's writes and, if they changed anything, records it as a
 * `reconciler.decided` event (what the processor said, what was done about it) in the same
 * transaction: the timeline shows a decision if and only if it took effect.
 */
export function decided(
  sql: postgres.Sql,
  payment: ReconciledPayment,
  detail: Record<string, unknown>,
  write: (tx: postgres.TransactionSql) => Promise<boolean>,
): Promise<boolean> {
  return sql.begin(async (tx) => {
    if (!(await write(tx))) return false;
    await recordPaymentEvents(tx, [
      {
        tenantId: payment.tenant_id,
        paymentId: payment.id,
        actor: 'reconciler',
        kind: 'reconciler.decided',
        detail,
      },
    ]);
    return true;
  });
}

/** The guarded settle as a decision (`decision` defaults to the status it settles). */
export function settleDecided(
  sql: postgres.Sql,
  payment: ReconciledPayment,
  detail: Record<string, unknown>,
  settlement: PaymentSettlement,
  options?: Parameters<typeof settlePayment>[3],
): Promise<boolean> {
  return decided(sql, payment, { decision: settlement.status, ...detail }, (tx) =>
    settlePayment(tx, { tenantId: payment.tenant_id, paymentId: payment.id }, settlement, options),
  );
}

/**
 * Moves an undecided payment's next check a backoff later (by its number of checks, at most
 * `capMs`) and counts the check, while its status still matches `stillUndecided`; with the
 * decision's event when `detail` is given.
 */
export async function checkAgainLater(
  sql: postgres.Sql,
  payment: ReconciledPayment,
  stillUndecided: SQL,
  backoff: BackoffPolicy,
  detail?: Record<string, unknown>,
  capMs = Number.POSITIVE_INFINITY,
): Promise<void> {
  const delayMs = Math.min(equalJitterDelayMs(payment.reconcile_checks + 1, backoff), capMs);
  const decision = {
    ...detail,
    decision: 'check_again_later',
    check: payment.reconcile_checks + 1,
    retryInMs: delayMs,
  };
  const write = async (tx: postgres.TransactionSql | postgres.Sql) => {
    const rows = await runStatement(
      tx,
      drizzleSql`
      update payments
      set reconcile_after = now() + ${msInterval(delayMs)},
          reconcile_checks = reconcile_checks + 1
      where tenant_id = ${payment.tenant_id} and id = ${payment.id} and ${stillUndecided}
      returning id`,
    );
    return rows.length === 1;
  };
  if (detail) await decided(sql, payment, decision, write);
  else await write(sql);
}

/**
 * Cancels the payment's intent (`cancellation_reason: abandoned`) under its cancel key, so a
 * retried cancel whose answer was lost replays it, and settles only on the processor's
 * `canceled`, the proof that nobody was charged. A refusal (it charged, is processing, or the
 * shopper answered meanwhile) or no answer settles nothing: the next look reads the intent.
 */
export async function cancelThenSettle(
  options: { sql: postgres.Sql; log: Log },
  processor: Stripe,
  payment: ReconciledPayment & { downstream_key: string },
  intentId: string,
  then: {
    refusedLog: string;
    refusedFields?: (error: unknown) => Record<string, unknown>;
    detail: Record<string, unknown>;
    settlement: PaymentSettlement;
  },
): Promise<boolean> {
  const cancelKey = cancelKeyFor(payment.downstream_key);
  try {
    const intent = await processor.paymentIntents.cancel(
      intentId,
      { cancellation_reason: 'abandoned' },
      { idempotencyKey: cancelKey },
    );
    if (intent.status !== 'canceled') return false;
  } catch (error) {
    const fields = { payment: payment.id, intent: intentId, error: String(error) };
    options.log(then.refusedLog, { ...fields, ...then.refusedFields?.(error) });
    return false;
  }
  const detail = { ...then.detail, intent: intentId, cancelKey };
  return settleDecided(options.sql, payment, detail, then.settlement);
}
