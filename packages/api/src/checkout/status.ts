import { timingSafeEqual } from 'node:crypto';
import { payments } from '@once/db/schema';
import { isTerminalPayment } from '@once/payments';
import { and, eq } from 'drizzle-orm';
import type { Database } from '../database.ts';
import { ApiError } from '../errors/api-error.ts';
import { checkoutKeyProof } from './checkout-key-proof.ts';
import type { PaymentView, StatusInput } from './status.types.ts';

export function toPaymentView(row: typeof payments.$inferSelect): PaymentView {
  return {
    paymentId: row.id,
    status: row.status,
    terminal: isTerminalPayment(row.status),
    nextAction:
      row.status === 'requires_action' && row.nextActionUrl
        ? { type: 'redirect_to_url', url: row.nextActionUrl }
        : null,
    amount: row.amount,
    currency: row.currency,
    lines: row.lines,
    customerEmail: row.customerEmail,
    failureCode: row.failureCode,
    failureMessage: row.failureMessage,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/**
 * One payment of the calling tenant. Another tenant's payment id answers
 * `payment_not_found`, exactly like an id that does not exist, so ids leak nothing. With
 * `placedBy` (a shopper's session), only a payment that principal placed is found, or one
 * whose checkout key the caller proves (`input.checkoutKeyProof`): a renewed session still
 * follows the payment its key made (and reaches its 3-D Secure challenge), and a shopper
 * without the key learns nothing more than from an unknown id.
 */
export async function status({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string; placedBy?: string };
  input: StatusInput;
}): Promise<PaymentView> {
  const [row] = await ctx.db
    .select()
    .from(payments)
    .where(and(eq(payments.tenantId, ctx.tenantId), eq(payments.id, input.paymentId)))
    .limit(1);
  if (!row || !(await mayRead(row, ctx.placedBy, input.checkoutKeyProof))) {
    throw new ApiError('payment_not_found', undefined, { paymentId: input.paymentId });
  }
  return toPaymentView(row);
}

async function mayRead(
  row: typeof payments.$inferSelect,
  placedBy: string | undefined,
  proof: string | undefined,
): Promise<boolean> {
  if (placedBy === undefined || row.placedBy === placedBy) return true;
  if (proof === undefined) return false;
  const [given, expected] = [
    Buffer.from(proof),
    Buffer.from(await checkoutKeyProof(row.idempotencyKey)),
  ];
  return given.length === expected.length && timingSafeEqual(given, expected);
}
