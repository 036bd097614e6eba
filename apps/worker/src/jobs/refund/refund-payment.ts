import { type BackoffPolicy, equalJitterDelayMs } from '@once/backoff';
import { type ClaimedJob, finishJob, rescheduleJob } from '@once/db/outbox';
import { type PaymentEventInput, recordPaymentEvents } from '@once/db/payment-events';
import type { RefundStatus } from '@once/db/schema';
import { refundStatusesRecordableAs } from '@once/payments';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import { outcomeOfChargeError } from '../../processor/charge-outcome.ts';
import { observedCall, type ProcessorCall } from '../../processor/processor-call-log.ts';
import type { ChargePaymentDeps } from '../charge/charge-payment.ts';
import { outcomeRecordedEvent, type RecordResult } from '../outcome-recorded-event.ts';
import { type ActionJobResult, runProcessorActionJob } from '../processor-action-job.ts';

interface RefundTarget {
  id: string;
  amount: number;
  reason: string | null;
  status: string;
  processor_refund_id: string | null;
  processor_payment_intent_id: string | null;
  processor_secret_key: string;
}

/** The fields of a processor Refund the worker reads. */
interface ProcessorRefund {
  id: string;
  status: string | null;
  failure_reason?: string | null;
  metadata?: Record<string, string> | null;
}

/**
 * What one attempt tells us: the processor's refund (`pending`, `succeeded` or `failed`), a
 * definite refusal (`amount_too_large`, `charge_already_refunded`, ...: nothing moved), or, as
 * for a charge, `in_flight` / `ambiguous`.
 */
type RefundOutcome =
  | { kind: 'answered'; refund: ProcessorRefund }
  | { kind: 'refused'; code: string; message?: string }
  | { kind: 'in_flight'; reason: string }
  | { kind: 'ambiguous'; reason: string };

/**
 * Runs one claimed refund job, top to bottom like the protocol:
 * 1. read the refund, its payment's intent and the tenant's processor key; a refund already
 *    final (`succeeded` / `failed`) ends the job without a call;
 * 2. a refund the processor answered `pending` is RETRIEVED by id until it is final;
 * 3. otherwise look for it first among the intent's refunds (by the refund id in its
 *    metadata; a list is complete, unlike a search): an earlier attempt whose answer was lost,
 *    or the same refund requested before its row was lost in a failover (its id is derived
 *    from the operator's key), may have made it, and the processor may have forgotten its key
 *    since (Stripe keeps keys at least 24 hours);
 * 4. else create it with the refund's own downstream key (every attempt the same, so the
 *    processor replays a lost answer instead of refunding twice);
 * 5. record it and finish or reschedule the job in one transaction guarded by the lock token.
 *
 * @example
 * await refundPaymentJob(job, deps);
 */
export function refundPaymentJob(
  job: ClaimedJob<'refund_payment'>,
  deps: ChargePaymentDeps,
): Promise<ActionJobResult> {
  const refundId = typeof job.payload.refundId === 'string' ? job.payload.refundId : null;
  return runProcessorActionJob<RefundTarget, RefundOutcome>(job, deps, {
    logName: 'refund.attempted',
    load: (claimed) => (refundId ? loadRefund(deps.sql, claimed, refundId) : Promise.resolve(null)),
    skipReason: (target) =>
      !target
        ? 'refund_not_found'
        : !target.processor_payment_intent_id
          ? 'payment_has_no_intent'
          : ['requested', 'pending', 'unknown'].includes(target.status)
            ? null
            : `refund_${target.status}`,
    endOfSkipped: (target, reason) => (target && reason.startsWith('refund_') ? 'done' : 'dead'),
    attempt: (processor, target, calls) => refundOnce(processor, job, target, calls),
    record: (target, outcome, events) =>
      recordRefundOutcome(deps.sql, job, target, outcome, deps.backoff, events),
    describe: (target) => ({ refund: target.id }),
  });
}

async function loadRefund(
  sql: postgres.Sql,
  job: ClaimedJob,
  refundId: string,
): Promise<RefundTarget | null> {
  const [row] = await sql<RefundTarget[]>`
    select refund.id, refund.amount, refund.reason, refund.status, refund.processor_refund_id,
           payment.processor_payment_intent_id, tenant.processor_secret_key
    from refunds as refund
    join payments as payment
      on payment.tenant_id = refund.tenant_id and payment.id = refund.payment_id
    join tenants as tenant on tenant.id = refund.tenant_id
    where refund.tenant_id = ${job.tenantId} and refund.id = ${refundId}
      and refund.payment_id = ${job.paymentId}`;
  return row ?? null;
}

async function refundOnce(
  processor: Stripe,
  job: ClaimedJob,
  target: RefundTarget,
  calls: ProcessorCall[],
): Promise<RefundOutcome> {
  const intentId = target.processor_payment_intent_id!;
  try {
    if (target.processor_refund_id) {
      const refundId = target.processor_refund_id;
      const refund = await observedCall(calls, { call: 'retrieve_refund' }, () =>
        processor.refunds.retrieve(refundId),
      );
      return { kind: 'answered', refund };
    }
    const listed = await observedCall(calls, { call: 'list_refunds', intent: intentId }, () =>
      processor.refunds.list({ payment_intent: intentId, limit: 100 }),
    );
    const found = listed.data.find((refund) => refund.metadata?.refund_id === target.id);
    if (found) return { kind: 'answered', refund: found };
    const key = job.downstreamKey;
    const refund = await observedCall(calls, { call: 'refund', key, intent: intentId }, () =>
      processor.refunds.create(
        {
          payment_intent: intentId,
          amount: target.amount,
          ...(target.reason ? { reason: target.reason as Stripe.RefundCreateParams.Reason } : {}),
          metadata: { refund_id: target.id, payment_id: job.paymentId, tenant_id: job.tenantId },
        },
        { idempotencyKey: key },
      ),
    );
    return { kind: 'answered', refund };
  } catch (error) {
    const outcome = outcomeOfChargeError(error);
    switch (outcome.kind) {
      case 'in_flight':
      case 'ambiguous':
        return outcome;
      case 'rejected':
        return { kind: 'refused', code: outcome.code, message: outcome.message };
      default:
        return { kind: 'refused', code: 'unexpected_answer', message: outcome.kind };
    }
  }
}

/**
 * Records one attempt and finishes or reschedules the job in ONE transaction, guarded by the
 * lock token: a final refund (`succeeded` / `failed`) or a refusal (`failed` with its code)
 * ends the job; a `pending` refund is kept with its processor id and looked at again later
 * (without using an attempt); an ambiguous answer is retried with the same key and, after
 * `max_attempts`, leaves the refund `unknown`.
 */
async function recordRefundOutcome(
  sql: postgres.Sql,
  job: ClaimedJob,
  target: RefundTarget,
  outcome: RefundOutcome,
  backoff: BackoffPolicy,
  callEvents: readonly PaymentEventInput[],
): Promise<RecordResult> {
  return sql.begin(async (tx): Promise<RecordResult> => {
    const recorded = async (result: RecordResult): Promise<RecordResult> => {
      await recordPaymentEvents(tx, [
        ...callEvents,
        outcomeRecordedEvent(job, result, {
          refund: target.id,
          outcome:
            outcome.kind === 'answered'
              ? { kind: 'refund', status: outcome.refund.status, id: outcome.refund.id }
              : outcome,
        }),
      ]);
      return result;
    };
    // Only a move the refund lifecycle allows: a webhook may have recorded it first (a
    // `failed` after `succeeded` stays `failed`).
    const setRefund = (
      status: RefundStatus,
      processorRefundId: string | null,
      code: string | null = null,
      message: string | null = null,
    ) => tx`
      update refunds
      set status = ${status}, processor_refund_id = coalesce(${processorRefundId}, processor_refund_id),
          failure_code = ${code}, failure_message = ${message}, updated_at = now()
      where tenant_id = ${job.tenantId} and id = ${target.id}
        and status in ${tx(refundStatusesRecordableAs(status))}`;

    if (outcome.kind === 'answered' && outcome.refund.status === 'pending') {
      const delayMs = equalJitterDelayMs(Number.POSITIVE_INFINITY, backoff);
      if (!(await rescheduleJob(tx, job, delayMs, 'refund_pending', { countAttempt: false }))) {
        return { job: 'lease_lost' };
      }
      await setRefund('pending', outcome.refund.id);
      return recorded({ job: 'retry_scheduled', delayMs });
    }
    if (outcome.kind === 'answered') {
      const status = outcome.refund.status === 'succeeded' ? 'succeeded' : 'failed';
      if (!(await finishJob(tx, job, 'done', status === 'failed' ? 'refund_failed' : null))) {
        return { job: 'lease_lost' };
      }
      await setRefund(
        status,
        outcome.refund.id,
        status === 'failed' ? (outcome.refund.failure_reason ?? 'refund_failed') : null,
      );
      return recorded({ job: 'done' });
    }
    if (outcome.kind === 'refused') {
      if (!(await finishJob(tx, job, 'done', `refused: ${outcome.code}`))) {
        return { job: 'lease_lost' };
      }
      await setRefund('failed', null, outcome.code, outcome.message ?? null);
      return recorded({ job: 'done' });
    }
    if (outcome.kind === 'in_flight' || job.attempts < job.maxAttempts) {
      const inFlight = outcome.kind === 'in_flight';
      const delayMs = equalJitterDelayMs(
        inFlight ? Number.POSITIVE_INFINITY : job.attempts,
        backoff,
      );
      const rescheduled = await rescheduleJob(tx, job, delayMs, outcome.reason, {
        countAttempt: !inFlight,
      });
      if (!rescheduled) return { job: 'lease_lost' };
      return recorded({ job: 'retry_scheduled', delayMs });
    }
    if (!(await finishJob(tx, job, 'dead', outcome.reason))) return { job: 'lease_lost' };
    await setRefund('unknown', null, 'retries_exhausted', outcome.reason);
    return recorded({ job: 'dead' });
  });
}
