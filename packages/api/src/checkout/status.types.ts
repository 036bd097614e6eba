import type { PaymentStatus } from '@once/db/schema';
import { z } from 'zod';

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
export type StatusInput = z.infer<typeof statusInput>;

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
