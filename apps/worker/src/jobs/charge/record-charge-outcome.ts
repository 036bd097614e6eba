import type { BackoffPolicy } from '@once/backoff';
import { type ClaimedJob, finishJob } from '@once/db/outbox';
import { type PaymentEventInput, recordPaymentEvents } from '@once/db/payment-events';
import { type PaymentSettlement, settlePayment } from '@once/payments';
import type postgres from 'postgres';
import { type ChargeOutcome, settlementOf } from '../../processor/charge-outcome.ts';
import { outcomeRecordedEvent, type RecordResult, retryOnDoubt } from '../processor-action-job.ts';
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
export async function recordChargeOutcome(
  sql: postgres.Sql,
  job: ClaimedJob,
  outcome: ChargeOutcome,
  backoff: BackoffPolicy,
  /** The processor calls of this attempt (`processor.call`), recorded with the outcome. */
  callEvents: readonly PaymentEventInput[] = [],
  adopted?: AdoptedIntentHistory,
): Promise<RecordResult> {
  // Written only after the guarded job update matched: a worker whose lease was taken over
  // records neither the outcome nor its calls.
  const recorded = async (
    tx: postgres.TransactionSql,
    result: RecordResult,
    history?: Record<string, unknown>,
  ): Promise<RecordResult> => {
    await recordPaymentEvents(tx, [
      ...callEvents,
      outcomeRecordedEvent(job, result, {
        outcome: describeOutcome(outcome),
        ...(history ? { adopted: history } : {}),
      }),
    ]);
    return result;
  };
  return sql.begin(async (tx): Promise<RecordResult> => {
    // In flight: wait without using up an attempt. Giving up here is what once settled a
    // payment `failed` while its charge was committing.
    const retried = await retryOnDoubt(tx, job, outcome, backoff);
    if (retried) return retried.job === 'lease_lost' ? retried : recorded(tx, retried);
    const end = jobEndOf(outcome);
    if (!(await finishJob(tx, job, end.job, end.lastError))) return { job: 'lease_lost' };
    const payment = { tenantId: job.tenantId, paymentId: job.paymentId };
    const settled = await settlePayment(tx, payment, end.settlement);
    const history =
      settled && adopted ? await recordAdoptedIntentHistory(tx, payment, adopted) : undefined;
    return recorded(tx, { job: end.job }, history);
  });
}

/** The outcome as the timeline shows it: its kind and its reason or code. */
function describeOutcome(outcome: ChargeOutcome): Record<string, string> {
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
  switch (outcome.kind) {
    case 'in_flight': // never: always retried
    case 'ambiguous':
      // Out of attempts.
      return {
        job: 'dead',
        lastError: outcome.reason,
        settlement: {
          status: 'unknown',
          code: 'retries_exhausted',
          message: `last error: ${outcome.reason}`,
        },
      };
    case 'rejected':
      return {
        job: 'dead',
        lastError: `rejected: ${outcome.code}`,
        settlement: { status: 'unknown', code: outcome.code, message: outcome.message },
      };
    case 'declined':
    case 'authentication_failed':
      return {
        job: 'done',
        lastError: `${outcome.kind}: ${outcome.code}`,
        settlement: settlementOf(outcome),
      };
    default:
      return {
        job: 'done',
        lastError: outcome.kind === 'canceled' ? 'canceled' : null,
        settlement: settlementOf(outcome),
      };
  }
}
