import { type ClaimedJob, finishJob } from '@once/db/outbox';
import type { RefundStatus } from '@once/db/schema';
import { refundStatusesRecordableAs } from '@once/payments';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import { observedCall, type ProcessorCall } from '../../processor/processor-call-log.ts';
import {
  type ActionDoubt,
  actionOutcomeOfError,
  endOnDoubt,
  type JobDeps,
  type JobResult,
  retryOnDoubt,
  runProcessorActionJob,
  skipped,
} from '../processor-action-job.ts';

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
 * What one attempt tells us: the processor's refund (`pending`, `succeeded` or `failed`), or
 * no refund (refused, e.g. `amount_too_large`, `charge_already_refunded`; in flight; ambiguous).
 */
type RefundOutcome = { kind: 'answered'; refund: ProcessorRefund } | ActionDoubt;

/**
 * Runs one claimed refund job on the template: a final refund ends without a call; one the
 * processor answered `pending` is retrieved by id until final (without using an attempt);
 * otherwise it is first looked for among the intent's refunds by the refund id in its
 * metadata (a list is complete, unlike a search), since an earlier attempt, or the same
 * refund before its row was lost in a failover, may have made it after the processor forgot
 * its key; only then is it created under the refund's own downstream key.
 */
export function refundPaymentJob(
  job: ClaimedJob<'refund_payment'>,
  deps: JobDeps,
): Promise<JobResult> {
  const refundId = typeof job.payload.refundId === 'string' ? job.payload.refundId : null;
  return runProcessorActionJob<RefundTarget, RefundOutcome>(job, deps, {
    logName: 'refund.attempted',
    load: () => (refundId ? loadRefund(deps.sql, job, refundId) : Promise.resolve(null)),
    notFound: 'refund_not_found',
    skip: (target) =>
      !target.processor_payment_intent_id
        ? skipped('dead', 'payment_has_no_intent')
        : ['requested', 'pending', 'unknown'].includes(target.status)
          ? null
          : skipped('done', `refund_${target.status}`),
    attempt: (processor, target, calls) => refundOnce(processor, job, target, calls),
    describe: (target) => ({ refund: target.id }),
    describeOutcome: (outcome) =>
      outcome.kind === 'answered'
        ? { kind: 'refund', status: outcome.refund.status, id: outcome.refund.id }
        : outcome,
    end: async (tx, target, outcome) => {
      if (outcome.kind !== 'answered') {
        return endOnDoubt(tx, job, outcome, (status, code, message) =>
          setRefund(tx, job, target, status, null, code, message),
        );
      }
      const { refund } = outcome;
      if (refund.status === 'pending') {
        // Looked at again at the backoff cap without using up an attempt, like a charge in flight.
        const waiting = { kind: 'in_flight', reason: 'refund_pending' };
        const retried = (await retryOnDoubt(tx, job, waiting, deps.backoff))!;
        if (retried.job !== 'lease_lost') await setRefund(tx, job, target, 'pending', refund.id);
        return retried;
      }
      const status = refund.status === 'succeeded' ? 'succeeded' : 'failed';
      if (!(await finishJob(tx, job, 'done', status === 'failed' ? 'refund_failed' : null))) {
        return { job: 'lease_lost' };
      }
      const code = status === 'failed' ? (refund.failure_reason ?? 'refund_failed') : null;
      await setRefund(tx, job, target, status, refund.id, code);
      return { job: 'done' };
    },
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
    return actionOutcomeOfError(error);
  }
}

/** Moves the refund only as its lifecycle allows: a webhook may have recorded it first (a
 * `failed` after `succeeded` stays `failed`). */
function setRefund(
  tx: postgres.TransactionSql,
  job: ClaimedJob,
  target: RefundTarget,
  status: RefundStatus,
  processorRefundId: string | null,
  code: string | null = null,
  message: string | null = null,
) {
  return tx`
    update refunds
    set status = ${status}, processor_refund_id = coalesce(${processorRefundId}, processor_refund_id),
        failure_code = ${code}, failure_message = ${message}, updated_at = now()
    where tenant_id = ${job.tenantId} and id = ${target.id}
      and status in ${tx(refundStatusesRecordableAs(status))}`;
}
