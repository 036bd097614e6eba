import { timingSafeEqual } from 'node:crypto';
import { type PaymentStatus, payments } from '@once/db/schema';
import { isTerminalPayment } from '@once/payments';
import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import type { Database } from '../database.ts';
import { ApiError } from '../errors/api-error.ts';
import { checkoutKeyProof } from './checkout-key-proof.ts';

export const statusInput = z.object({
  paymentId: z.string().min(1).max(100),
  /**
   * `checkoutKeyProof(key)` of the checkout key that made the payment: a shopper's session that
   * did not place it (a renewed cookie) reads it with this. Hex SHA-256, see checkout-key-proof.ts.
   */
  checkoutKeyProof: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'checkoutKeyProof must be a lower-case hex SHA-256')
    .optional(),
});

/** A payment as the checkout page and `GET /api/v1/payments/:id` show it. */
export interface PaymentView {
  paymentId: string;
  status: PaymentStatus;
  /** True once the status can no longer change (`succeeded`, `declined`, `failed`, `canceled`...). */
  terminal: boolean;
  /**
   * While `requires_action`: where the shopper answers the bank's 3-D Secure challenge (as
   * Stripe's `next_action`). The page navigates there; null in every other state.
   */
  nextAction: { type: 'redirect_to_url'; url: string } | null;
  amount: number;
  currency: string;
  lines: { productId: string; name: string; quantity: number; unitAmount: number }[];
  customerEmail: string | null;
  failureCode: string | null;
  failureMessage: string | null;
  createdAt: string;
  updatedAt: string;
}

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
export async function status(
  ctx: { db: Database; tenantId: string; placedBy?: string },
  input: z.infer<typeof statusInput>,
): Promise<PaymentView> {
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
