import { paymentEvents, payments, tenants } from '@once/db/schema';
import { and, asc, eq } from 'drizzle-orm';
import type { Clock } from '../../clock.ts';
import type { Database } from '../../database.ts';
import { ApiError } from '../../errors/api-error.ts';
import {
  type ProcessorLedger,
  ProcessorUnreachableError,
} from '../../processor/processor-ledger.ts';
import { isoTimes } from './iso-times.ts';
import { chargesOfPayment, judgeLedgerVerdict, summariseCharges } from './ledger-verdict.ts';
import type { PaymentTimeline, PaymentTimelineInput } from './payment-timeline.types.ts';

/**
 * The life of one payment of the caller's tenant: every recorded event (attempts, commit,
 * claims, processor calls, outcomes, webhooks, reconciler decisions) oldest first, and the
 * processor ledger's verdict on it, judged by the same rules as `ops.ledger`. The events
 * are read before the ledger, so a charge landing in between shows as `app_behind`, never
 * as a false alarm. An unknown id (or another tenant's) is `payment_not_found`.
 *
 * @example
 * const timeline = await paymentTimeline({ ctx: { db, tenantId, processorLedger, clock }, input: { paymentId } });
 * timeline.events.map((event) => event.kind); // ['pay.attempt', 'payment.committed', 'job.claimed', ...]
 */
export async function paymentTimeline({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string; processorLedger: ProcessorLedger; clock: Clock };
  input: PaymentTimelineInput;
}): Promise<PaymentTimeline> {
  const [row] = await ctx.db
    .select({ payment: payments, processorAccountId: tenants.processorAccountId })
    .from(payments)
    .innerJoin(tenants, eq(tenants.id, payments.tenantId))
    .where(and(eq(payments.tenantId, ctx.tenantId), eq(payments.id, input.paymentId)))
    .limit(1);
  if (!row) throw new ApiError('payment_not_found', undefined, { paymentId: input.paymentId });
  const { payment, processorAccountId } = row;
  const events = await ctx.db
    .select()
    .from(paymentEvents)
    .where(and(eq(paymentEvents.tenantId, ctx.tenantId), eq(paymentEvents.paymentId, payment.id)))
    .orderBy(asc(paymentEvents.seq));

  const facts = {
    tenantId: payment.tenantId,
    paymentId: payment.id,
    status: payment.status,
    amount: payment.amount,
    currency: payment.currency,
    downstreamKey: payment.downstreamKey,
    processorPaymentIntentId: payment.processorPaymentIntentId,
  };
  const checkedAt = ctx.clock.now().toISOString();
  let ledger: PaymentTimeline['ledger'];
  if (!processorAccountId) {
    ledger = unverified('no_account', 'the tenant has no processor account', checkedAt);
  } else {
    try {
      const side = summariseCharges(
        chargesOfPayment(facts, await ctx.processorLedger.chargesOf(processorAccountId)),
      );
      ledger = {
        processor: 'reachable',
        processorError: null,
        side,
        ...judgeLedgerVerdict(facts, side),
        checkedAt,
      };
    } catch (error) {
      if (!(error instanceof ProcessorUnreachableError)) throw error;
      ledger = unverified('unreachable', error.message, checkedAt);
    }
  }

  return {
    payment: {
      paymentId: payment.id,
      status: payment.status,
      amount: payment.amount,
      currency: payment.currency,
      idempotencyKey: payment.idempotencyKey,
      downstreamKey: payment.downstreamKey,
      processorPaymentIntentId: payment.processorPaymentIntentId,
      reconcileChecks: payment.reconcileChecks,
      createdAt: payment.createdAt.toISOString(),
      updatedAt: payment.updatedAt.toISOString(),
    },
    events: events.map(({ tenantId, paymentId, ...event }) => isoTimes(event)),
    ledger,
  };
}

function unverified(
  processor: 'unreachable' | 'no_account',
  reason: string,
  checkedAt: string,
): PaymentTimeline['ledger'] {
  return {
    processor,
    processorError: reason,
    side: null,
    verdict: 'unverified',
    reason,
    checkedAt,
  };
}
