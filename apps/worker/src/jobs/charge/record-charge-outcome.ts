import type { BackoffPolicy } from '@once/backoff';
import { type ClaimedJob, finishJob } from '@once/db/outbox';
import type { PaymentEventInput } from '@once/db/payment-events';
import { type PaymentSettlement, settlePayment } from '@once/payments';
import type postgres from 'postgres';
import { type ChargeOutcome, isDefinite, settlementOf } from '../../processor/charge-outcome.ts';
import { type RecordResult, recordOutcome } from '../processor-action-job.ts';
import { type AdoptedIntentHistory, recordAdoptedIntentHistory } from './adopted-intent-history.ts';

/**
 * Records one attempt's outcome and finishes (or reschedules) the job in ONE transaction,
 * guarded by the job's `lock_token`: if the lease was taken over, the job update matches
 * no row and the transaction writes nothing, so a stalled worker that wakes up late can
 * never overwrite the work of the worker that replaced it.
 *
 * - succeeded / declined -> job `done`, payment settled.
 * - authorized -> job `done`, payment `authorized` (manual capture: an operator captures).
 * - canceled -> job `done`, payment `failed`: the processor canceled the intent, the proof
 *   that nobody was charged.
 * - requires_action -> job `done`, payment `requires_action` with the challenge URL: the
 *   shopper's turn; the webhook or the reconciler records what the processor then says.
 * - authentication_failed -> job `done`, payment `failed` with the authentication error.
 * - in_flight (409 key in use, intent processing) -> job `pending` again after the backoff
 *   cap (jittered), and the claim is given back: it never counts toward the dead letter.
 * - ambiguous -> job `pending` again after backoff (same downstream key); once
 *   `max_attempts` claims are used up -> job `dead`, payment `unknown` (reconciler's turn).
 * - rejected -> job `dead`, payment `unknown`: the reconciler asks the ledger.
 * An intent taken over from an earlier payment of the checkout (`adopted`) also brings what
 * happened to it after its charge: its capture or void and its refunds, recorded with the
 * settlement (an intent authorised, then voided, comes as `authorized` and ends `voided`).
 */
export function recordChargeOutcome(
  sql: postgres.Sql,
  job: ClaimedJob,
  outcome: ChargeOutcome,
  backoff: BackoffPolicy,
  /** The processor calls of this attempt (`processor.call`), recorded with the outcome. */
  callEvents: readonly PaymentEventInput[] = [],
  adopted?: AdoptedIntentHistory,
): Promise<RecordResult> {
  const about: Record<string, unknown> = { outcome: describeChargeOutcome(outcome) };
  return recordOutcome(sql, job, backoff, { outcome, callEvents, about }, (tx) =>
    endCharge(tx, job, outcome, about, adopted),
  );
}

/** Ends the job on an outcome not retried and settles the payment, with an adopted intent's history. */
export async function endCharge(
  tx: postgres.TransactionSql,
  job: ClaimedJob,
  outcome: ChargeOutcome,
  about: Record<string, unknown>,
  adopted: AdoptedIntentHistory | undefined,
): Promise<RecordResult> {
  const end = jobEndOf(outcome);
  if (!(await finishJob(tx, job, end.job, end.lastError))) return { job: 'lease_lost' };
  const payment = { tenantId: job.tenantId, paymentId: job.paymentId };
  if ((await settlePayment(tx, payment, end.settlement)) && adopted) {
    about.adopted = await recordAdoptedIntentHistory(tx, payment, adopted);
  }
  return { job: end.job };
}

/** The outcome as the timeline shows it: its kind and its reason or code. */
export function describeChargeOutcome(outcome: ChargeOutcome): Record<string, string> {
  return {
    kind: outcome.kind,
    ...('reason' in outcome ? { reason: outcome.reason } : {}),
    ...('code' in outcome ? { code: outcome.code } : {}),
    ...('paymentIntentId' in outcome && outcome.paymentIntentId
      ? { intent: outcome.paymentIntentId }
      : {}),
  };
}

/** How a job ends on an outcome it will not be retried after, and where its payment goes. */
function jobEndOf(outcome: ChargeOutcome): {
  job: 'done' | 'dead';
  lastError: string | null;
  settlement: PaymentSettlement;
} {
  if (outcome.kind === 'rejected') {
    const settlement = { status: 'unknown', code: outcome.code, message: outcome.message } as const;
    return { job: 'dead', lastError: `rejected: ${outcome.code}`, settlement };
  }
  if (!isDefinite(outcome)) {
    // Out of attempts (in flight never ends here: it is always retried).
    const message = `last error: ${outcome.reason}`;
    const settlement = { status: 'unknown', code: 'retries_exhausted', message } as const;
    return { job: 'dead', lastError: outcome.reason, settlement };
  }
  const lastError =
    'code' in outcome
      ? `${outcome.kind}: ${outcome.code}`
      : outcome.kind === 'canceled'
        ? 'canceled'
        : null;
  return { job: 'done', lastError, settlement: settlementOf(outcome) };
}
