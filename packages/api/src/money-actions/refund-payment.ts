import { enqueueOutboxJob, moneyMoveJob } from '@once/db/outbox';
import { refunds } from '@once/db/schema';
import { IdempotencyError } from '@once/idempotency';
import { newJobId, refundDownstreamKeyFor, refundIdFor } from '@once/payments';
import { retrySerializationFailures } from '@once/postgres';
import { runStatement } from '@once/postgres/sql';
import { and, eq, sql } from 'drizzle-orm';
import type { Transaction } from '../database.ts';
import { ApiError } from '../errors/api-error.ts';
import { bindMoneyActionKey } from './bind-money-action-key.ts';
import type { MoneyActionContext } from './money-action-context.ts';
import type { RefundResult } from './refund-payment.types.ts';

/**
 * Accepts a refund (every transport calls this one function): in ONE transaction, under the
 * payment's row lock (two refunds of one payment are decided one after the other), binds the
 * caller's key to it (`bindMoneyActionKey`), checks what is left (received minus every refund
 * not `failed`), writes the refund (`requested`), its outbox job and the caller's stored answer.
 * The refund's id comes from the tenant and the key, so the same request, however it comes
 * again, is answered with that refund as it is now; another under the key is
 * `idempotency_key_reused`. Refused with nothing written: `payment_not_found`,
 * `payment_not_refundable`, `refund_amount_too_large` (with what is left).
 */
export function refundPayment(
  ctx: MoneyActionContext<RefundResult>,
  input: { paymentId: string; amount?: number; reason?: string },
): Promise<RefundResult> {
  return retrySerializationFailures(() =>
    ctx.db.transaction(async (tx) => {
      // The lock first, then what was refunded, in a statement of its own: under READ
      // COMMITTED a statement sees what was committed when it began, so a sum read in the
      // statement that waited for the lock would miss the refund the lock's holder just made.
      const [payment] = await runStatement<{ status: string; received: number }>(
        tx,
        sql`
        select payment.status,
               case payment.status when 'succeeded' then payment.amount
                                   when 'captured' then coalesce(payment.amount_captured, 0)
                                   else 0 end as received
        from payments as payment
        where payment.tenant_id = ${ctx.tenantId} and payment.id = ${input.paymentId}
        for update of payment`,
      );
      if (!payment) throw new ApiError('payment_not_found', `No payment ${input.paymentId}`);
      await bindMoneyActionKey(tx, {
        tenantId: ctx.tenantId,
        key: ctx.requestKey,
        kind: 'refund',
        paymentId: input.paymentId,
      });
      const refundId = refundIdFor(ctx.tenantId, ctx.requestKey);
      const existing = await existingRefund(tx, ctx.tenantId, refundId, input);
      if (existing) {
        await ctx.complete(tx, existing);
        return existing;
      }
      if (payment.received === 0) {
        throw new ApiError('payment_not_refundable', undefined, { status: payment.status });
      }
      const [counted] = await runStatement<{ refunded: number }>(
        tx,
        sql`select coalesce(sum(amount), 0)::int as refunded from refunds
            where tenant_id = ${ctx.tenantId} and payment_id = ${input.paymentId}
              and status <> 'failed'`,
      );
      const left = payment.received - (counted?.refunded ?? 0);
      const amount = input.amount ?? left;
      if (amount < 1 || amount > left) {
        throw new ApiError('refund_amount_too_large', undefined, {
          refundable: left,
          requested: amount,
        });
      }
      const downstreamKey = refundDownstreamKeyFor(ctx.tenantId, ctx.requestKey);
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
        .returning();
      const job = {
        tenantId: ctx.tenantId,
        id: newJobId(),
        paymentId: input.paymentId,
        downstreamKey,
      };
      await enqueueOutboxJob(tx, moneyMoveJob(job, 'refund', refundId, amount), {
        notify: ctx.notifyOutbox !== false,
      });
      const result = refundResultOf(refund!);
      await ctx.complete(tx, result);
      return result;
    }),
  );
}

/**
 * The refund this request's key already made, as it is now, or null; refused when it was made
 * by another request (another payment, amount or reason) under the same key.
 */
async function existingRefund(
  tx: Transaction,
  tenantId: string,
  refundId: string,
  input: { paymentId: string; amount?: number; reason?: string },
): Promise<RefundResult | null> {
  const [row] = await tx
    .select()
    .from(refunds)
    .where(and(eq(refunds.tenantId, tenantId), eq(refunds.id, refundId)));
  if (!row) return null;
  const same =
    row.paymentId === input.paymentId &&
    (input.amount === undefined || input.amount === row.amount) &&
    (input.reason ?? null) === row.reason;
  if (!same) throw new IdempotencyError('idempotency_key_reused');
  return refundResultOf(row);
}

/** A refund row as the refund request answers it. */
function refundResultOf(row: typeof refunds.$inferSelect): RefundResult {
  return {
    refundId: row.id,
    paymentId: row.paymentId,
    amount: row.amount,
    status: row.status,
    createdAt: row.createdAt.toISOString(),
  };
}
