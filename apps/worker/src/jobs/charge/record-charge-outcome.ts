import { type ClaimedJob, finishJob } from '@once/db/outbox';
import { type PaymentSettlement, settlePayment } from '@once/payments';
import type postgres from 'postgres';
import { type ChargeOutcome, isDefinite, settlementOf } from '../../processor/charge-outcome.ts';
import type { RecordResult } from '../processor-action-job.ts';
import { type AdoptedIntentHistory, recordAdoptedIntentHistory } from './adopted-intent-history.ts';

/**
 * Ends a charge's job and settles its payment, in the one transaction `recordOutcome`
 * (processor-action-job.ts) opens under the job's `lock_token`, so a stalled worker whose
 * lease was taken over writes nothing. The outcomes it retries it reschedules itself:
 * - succeeded, authorized (manual capture), declined, requires_action (the shopper's turn, with
 *   the challenge URL), authentication_failed, canceled (the processor's proof that nobody was
 *   charged: `failed`) -> job `done`, payment settled ({@link settlementOf});
 * - in_flight (409 key in use, intent processing) -> job `pending` at the backoff cap, the
 *   claim given back: it never counts toward the dead letter;
 * - ambiguous -> job `pending` after backoff, the same downstream key next time; out of
 *   attempts, or rejected -> job `dead`, payment `unknown`: the reconciler asks the ledger.
 * An intent taken over from an earlier payment of the checkout (`adopted`) brings its capture
 * or void and its refunds, recorded with the settlement.
 */
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

/** The outcome as the timeline shows it: its kind, its reason or code, and its intent. */
export function describeChargeOutcome(outcome: ChargeOutcome): Record<string, unknown> {
  const { kind, reason, code, paymentIntentId } = outcome as Partial<Record<string, string>>;
  return { kind, reason, code, intent: paymentIntentId || undefined };
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
