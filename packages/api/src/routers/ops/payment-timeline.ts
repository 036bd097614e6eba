import { paymentEvents, payments, tenants } from '@once/db/schema';
import { and, asc, eq } from 'drizzle-orm';
import { z } from 'zod';
import type { Clock } from '../../clock.ts';
import type { Database } from '../../database.ts';
import { ApiError } from '../../errors/api-error.ts';
import { askProcessorAbout, type ProcessorLedger } from '../../processor/processor-admin.ts';
import { isoTimes } from './iso-times.ts';
import { judgePayment } from './ledger-verdict.ts';

export const paymentTimelineInput = z.object({ paymentId: z.string().min(1).max(100) });

/**
 * The life of one payment of the caller's tenant: every recorded event (attempts, commit,
 * claims, processor calls, outcomes, webhooks, reconciler decisions) oldest first, and the
 * processor ledger's verdict on it, judged by the same rules as `ops.ledger` (`judgePayment`).
 * The events are read before the ledger, so a charge landing in between shows as `app_behind`,
 * never as a false alarm. An unknown id (or another tenant's) is `payment_not_found`.
 */
export async function paymentTimeline(
  ctx: { db: Database; tenantId: string; processorLedger: ProcessorLedger; clock: Clock },
  input: z.infer<typeof paymentTimelineInput>,
) {
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

  const checkedAt = ctx.clock.now().toISOString();
  const asked = await askProcessorAbout(processorAccountId, (account) =>
    ctx.processorLedger.chargesOf(account),
  );
  const ledger = {
    processor: asked.processor,
    processorError: asked.processorError,
    ...judgePayment(payment, asked),
    checkedAt,
  };
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
