import { enqueueOutboxJob, moneyMoveJob } from '@once/db/outbox';
import { type PaymentActionKind, paymentActions, payments } from '@once/db/schema';
import { IdempotencyError } from '@once/idempotency';
import { actionDownstreamKeyFor, newJobId, paymentActionIdFor } from '@once/payments';
import { retrySerializationFailures } from '@once/postgres';
import { and, eq, ne } from 'drizzle-orm';
import type { Transaction } from '../database.ts';
import { ApiError } from '../errors/api-error.ts';
import type { PaymentActionResult } from './authorization-action.types.ts';
import { bindMoneyActionKey } from './bind-money-action-key.ts';
import type { MoneyActionContext } from './money-action-context.ts';

/**
 * Accepts a capture or void (every transport calls this one function): in ONE transaction,
 * under the payment's row lock, binds the caller's key to it (`bindMoneyActionKey`), writes
 * the action (`pending`), its outbox job and the caller's stored answer; the worker calls the
 * processor. The action's id comes from the tenant and the key, so the same request, however
 * it comes again, is answered with that action as it is now; another under the key is
 * `idempotency_key_reused`. Refused with nothing written: `payment_not_found`,
 * `payment_not_authorized` (not authorised, or a capture or void under way or done: no second
 * capture under another key), `capture_amount_too_large`.
 */
export function requestAuthorizationAction(
  ctx: MoneyActionContext<PaymentActionResult>,
  kind: PaymentActionKind,
  input: { paymentId: string; amount?: number },
): Promise<PaymentActionResult> {
  return retrySerializationFailures(() =>
    ctx.db.transaction(async (tx) => {
      const [payment] = await tx
        .select({
          status: payments.status,
          amount: payments.amount,
          amountCaptured: payments.amountCaptured,
        })
        .from(payments)
        .where(and(eq(payments.tenantId, ctx.tenantId), eq(payments.id, input.paymentId)))
        .for('update');
      if (!payment) throw new ApiError('payment_not_found', `No payment ${input.paymentId}`);
      await bindMoneyActionKey(tx, {
        tenantId: ctx.tenantId,
        key: ctx.requestKey,
        kind,
        paymentId: input.paymentId,
      });
      const actionId = paymentActionIdFor(kind, ctx.tenantId, ctx.requestKey);
      const existing = await existingAction(tx, ctx.tenantId, actionId, kind, input);
      if (existing) {
        await ctx.complete(tx, existing);
        return existing;
      }
      const [live] = await tx
        .select({ id: paymentActions.id, kind: paymentActions.kind })
        .from(paymentActions)
        .where(
          and(
            eq(paymentActions.tenantId, ctx.tenantId),
            eq(paymentActions.paymentId, input.paymentId),
            ne(paymentActions.status, 'failed'),
          ),
        )
        .limit(1);
      if (!live && tookOverThisEnd(payment, kind, input.amount)) {
        // Answered as done: nothing is sent again.
        const result = await writeAction(ctx, tx, kind, input, actionId, 'succeeded');
        await ctx.complete(tx, result);
        return result;
      }
      if (payment.status !== 'authorized' || live) {
        throw new ApiError('payment_not_authorized', undefined, {
          status: payment.status,
          ...(live ? { action: live.id, actionKind: live.kind } : {}),
        });
      }
      if (input.amount !== undefined && input.amount > payment.amount) {
        throw new ApiError('capture_amount_too_large', undefined, {
          authorized: payment.amount,
          requested: input.amount,
        });
      }
      const result = await writeAction(ctx, tx, kind, input, actionId, 'pending');
      const job = {
        tenantId: ctx.tenantId,
        id: newJobId(),
        paymentId: input.paymentId,
        downstreamKey: actionDownstreamKeyFor(kind, ctx.tenantId, ctx.requestKey),
      };
      await enqueueOutboxJob(tx, moneyMoveJob(job, kind, actionId, result.amount), {
        notify: ctx.notifyOutbox !== false,
      });
      await ctx.complete(tx, result);
      return result;
    }),
  );
}

/**
 * The action this request's key already made, as it is now, or null; refused when it was made
 * by another request (another payment or amount) under the same key.
 */
async function existingAction(
  tx: Transaction,
  tenantId: string,
  actionId: string,
  kind: PaymentActionKind,
  input: { paymentId: string; amount?: number },
): Promise<PaymentActionResult | null> {
  const [row] = await tx
    .select()
    .from(paymentActions)
    .where(and(eq(paymentActions.tenantId, tenantId), eq(paymentActions.id, actionId)));
  if (!row) return null;
  const amount = kind === 'capture' ? (input.amount ?? null) : null;
  if (row.paymentId !== input.paymentId || row.kind !== kind || row.amount !== amount) {
    throw new IdempotencyError('idempotency_key_reused');
  }
  return actionResultOf(row);
}

/** An action row as the capture or void answers it. */
function actionResultOf(row: typeof paymentActions.$inferSelect): PaymentActionResult {
  return {
    actionId: row.id,
    paymentId: row.paymentId,
    kind: row.kind,
    status: row.status,
    amount: row.amount,
    createdAt: row.createdAt.toISOString(),
  };
}

/**
 * A payment re-created after a failover lost its row, whose intent the processor already
 * captured or voided: the retry of that same end (for a capture, the amount taken) is answered
 * as done and recorded as this key's action, and no money moves.
 */
function tookOverThisEnd(
  payment: { status: string; amount: number; amountCaptured: number | null },
  kind: PaymentActionKind,
  amount: number | undefined,
): boolean {
  if (kind === 'void') return payment.status === 'voided';
  return payment.status === 'captured' && (amount ?? payment.amount) === payment.amountCaptured;
}

/** The action row under this request's key, and the answer that tells it. */
async function writeAction(
  ctx: MoneyActionContext<PaymentActionResult>,
  tx: Transaction,
  kind: PaymentActionKind,
  input: { paymentId: string; amount?: number },
  actionId: string,
  status: 'pending' | 'succeeded',
): Promise<PaymentActionResult> {
  const [action] = await tx
    .insert(paymentActions)
    .values({
      tenantId: ctx.tenantId,
      id: actionId,
      paymentId: input.paymentId,
      kind,
      amount: kind === 'capture' ? (input.amount ?? null) : null,
      status,
      downstreamKey: actionDownstreamKeyFor(kind, ctx.tenantId, ctx.requestKey),
      requestedBy: ctx.principal,
    })
    .returning();
  return actionResultOf(action!);
}
