import { type BackoffPolicy, equalJitterDelayMs } from '@once/backoff';
import { type ClaimedJob, finishJob, rescheduleJob } from '@once/db/outbox';
import { type PaymentEventInput, recordPaymentEvents } from '@once/db/payment-events';
import type { PaymentActionKind } from '@once/db/schema';
import { type PaymentSettlement, settlePayment } from '@once/payments';
import type postgres from 'postgres';
import { outcomeRecordedEvent, type RecordResult } from '../outcome-recorded-event.ts';
import type { AuthorizationEnd } from './authorization-outcome.ts';

/** An operator's capture or void as its job reads it. */
export interface AuthorizationAction {
  id: string;
  kind: PaymentActionKind;
  status: string;
  /** A capture's `amount_to_capture`; null: all that is capturable. */
  amount: number | null;
  payment_status: string;
  processor_payment_intent_id: string | null;
  processor_secret_key: string;
}

/**
 * What one attempt at a capture or void tells us: `ended` (the intent was captured or
 * canceled, by this action or, read afterwards, by whatever else ended it), `refused` (a
 * definite 4xx: nothing moved), or, as for a charge, `in_flight` / `ambiguous`.
 */
export type ActionOutcome =
  | { kind: 'ended'; end: AuthorizationEnd }
  | { kind: 'refused'; code: string; message?: string }
  | { kind: 'in_flight'; reason: string }
  | { kind: 'ambiguous'; reason: string };

/**
 * Records one attempt's outcome and finishes (or reschedules) the job in ONE transaction,
 * guarded by the job's lock token (a worker whose lease was taken over writes nothing):
 * - ended -> job `done`; the payment `captured` (with the captured amount) or `voided`; the
 *   action `succeeded` if that is what it asked for, else `failed` with the reason;
 * - refused -> job `done`, action `failed` with the processor's code; the payment stays
 *   `authorized`;
 * - in_flight -> rescheduled without using an attempt; ambiguous -> rescheduled with backoff
 *   (same downstream key), and after `max_attempts` job `dead`, action `unknown`.
 *
 * @example
 * await recordActionOutcome(sql, job, action, { kind: 'ended', end: { payment: 'voided' } }, backoff);
 */
export async function recordActionOutcome(
  sql: postgres.Sql,
  job: ClaimedJob,
  action: AuthorizationAction,
  outcome: ActionOutcome,
  backoff: BackoffPolicy,
  callEvents: readonly PaymentEventInput[] = [],
): Promise<RecordResult> {
  return sql.begin(async (tx): Promise<RecordResult> => {
    const recorded = async (result: RecordResult): Promise<RecordResult> => {
      await recordPaymentEvents(tx, [
        ...callEvents,
        outcomeRecordedEvent(job, result, {
          action: action.id,
          outcome: { kind: outcome.kind, ...describe(outcome) },
        }),
      ]);
      return result;
    };
    if (outcome.kind === 'in_flight') {
      const delayMs = equalJitterDelayMs(Number.POSITIVE_INFINITY, backoff);
      if (!(await rescheduleJob(tx, job, delayMs, outcome.reason, { countAttempt: false }))) {
        return { job: 'lease_lost' };
      }
      return recorded({ job: 'retry_scheduled', delayMs });
    }
    if (outcome.kind === 'ambiguous') {
      if (job.attempts < job.maxAttempts) {
        const delayMs = equalJitterDelayMs(job.attempts, backoff);
        if (!(await rescheduleJob(tx, job, delayMs, outcome.reason))) return { job: 'lease_lost' };
        return recorded({ job: 'retry_scheduled', delayMs });
      }
      if (!(await finishJob(tx, job, 'dead', outcome.reason))) return { job: 'lease_lost' };
      await setActionStatus(tx, job, action, 'unknown', 'retries_exhausted', outcome.reason);
      return recorded({ job: 'dead' });
    }
    if (outcome.kind === 'refused') {
      if (!(await finishJob(tx, job, 'done', `refused: ${outcome.code}`))) {
        return { job: 'lease_lost' };
      }
      await setActionStatus(tx, job, action, 'failed', outcome.code, outcome.message);
      return recorded({ job: 'done' });
    }
    const { end } = outcome;
    const asked = action.kind === 'capture' ? 'captured' : 'voided';
    if (
      !(await finishJob(tx, job, 'done', end.payment === asked ? null : `found_${end.payment}`))
    ) {
      return { job: 'lease_lost' };
    }
    if (end.payment === asked) await setActionStatus(tx, job, action, 'succeeded');
    else await setActionStatus(tx, job, action, 'failed', `payment_already_${end.payment}`);
    const settlement: PaymentSettlement =
      end.payment === 'captured'
        ? { status: 'captured', amountCaptured: end.amountCaptured }
        : { status: 'voided' };
    await settlePayment(tx, { tenantId: job.tenantId, paymentId: job.paymentId }, settlement);
    return recorded({ job: 'done' });
  });
}

/** Moves a still unanswered action to its status; an answered one never moves again. */
async function setActionStatus(
  tx: postgres.TransactionSql,
  job: ClaimedJob,
  action: AuthorizationAction,
  status: 'succeeded' | 'failed' | 'unknown',
  code: string | null = null,
  message: string | null = null,
): Promise<void> {
  await tx`
    update payment_actions
    set status = ${status}, failure_code = ${code}, failure_message = ${message ?? null},
        updated_at = now()
    where tenant_id = ${job.tenantId} and id = ${action.id} and status in ('pending', 'unknown')`;
}

function describe(outcome: ActionOutcome): Record<string, unknown> {
  if (outcome.kind === 'ended') return { ...outcome.end };
  if (outcome.kind === 'refused') return { code: outcome.code };
  return { reason: outcome.reason };
}
