import { enqueueOutboxJob } from '@once/db/outbox';
import { refunds } from '@once/db/schema';
import { newJobId, newRefundId, refundDownstreamKeyFor } from '@once/payments';
import { retrySerializationFailures } from '@once/postgres';
import { runStatement } from '@once/postgres/sql';
import { sql } from 'drizzle-orm';
import { ApiError } from '../errors/api-error.ts';
import type { MoneyActionContext } from './money-action-context.ts';
import type { RefundResult } from './refund-payment.types.ts';

/**
 * Accepts a refund (from the cockpit or the merchant's API: every transport calls this one
 * function): in ONE transaction, under the payment's row lock (so two
 * refunds of one payment are decided one after the other), checks what is left to refund
 * (received: the amount of a succeeded payment, the captured amount of a captured one; minus
 * every refund not `failed`), then writes the refund (`requested`), the outbox job that sends
 * it with the refund's own downstream key, and the caller's stored answer. Refused with
 * nothing written (the key is released): an unknown payment (`payment_not_found`), one that
 * received nothing (`payment_not_refundable`), more than is left
 * (`refund_amount_too_large`, with what is left).
 *
 * @example
 * await refundPayment(ctx, { paymentId: 'pay_1', amount: 500 });
 */
export function refundPayment(
  ctx: MoneyActionContext<RefundResult>,
  input: { paymentId: string; amount?: number; reason?: string },
): Promise<RefundResult> {
  return retrySerializationFailures(() =>
    ctx.db.transaction(async (tx) => {
      const rows = await runStatement<{ status: string; received: number; refunded: number }>(
        tx,
        sql`
        select payment.status,
               case payment.status when 'succeeded' then payment.amount
                                   when 'captured' then coalesce(payment.amount_captured, 0)
                                   else 0 end as received,
               (select coalesce(sum(refund.amount), 0)::int from refunds as refund
                 where refund.tenant_id = payment.tenant_id and refund.payment_id = payment.id
                   and refund.status <> 'failed') as refunded
        from payments as payment
        where payment.tenant_id = ${ctx.tenantId} and payment.id = ${input.paymentId}
        for update of payment`,
      );
      const payment = rows[0];
      if (!payment) throw new ApiError('payment_not_found', `No payment ${input.paymentId}`);
      if (payment.received === 0) {
        throw new ApiError('payment_not_refundable', undefined, { status: payment.status });
      }
      const left = payment.received - payment.refunded;
      const amount = input.amount ?? left;
      if (amount < 1 || amount > left) {
        throw new ApiError('refund_amount_too_large', undefined, {
          refundable: left,
          requested: amount,
        });
      }
      const refundId = newRefundId();
      const downstreamKey = refundDownstreamKeyFor(refundId);
      const [refund] = await tx
        .insert(refunds)
        .values({
          tenantId: ctx.tenantId,
          id: refundId,
          paymentId: input.paymentId,
          amount,
          reason: input.reason ?? null,
          downstreamKey,
          requestedBy: ctx.principal,
        })
        .returning({ createdAt: refunds.createdAt });
      await enqueueOutboxJob(
        tx,
        {
          tenantId: ctx.tenantId,
          id: newJobId(),
          kind: 'refund_payment',
          paymentId: input.paymentId,
          downstreamKey,
          payload: { refundId },
        },
        { notify: ctx.notifyOutbox !== false },
      );
      const result: RefundResult = {
        refundId,
        paymentId: input.paymentId,
        amount,
        status: 'requested',
        createdAt: refund!.createdAt.toISOString(),
      };
      await ctx.complete(tx, result);
      return result;
    }),
  );
}
