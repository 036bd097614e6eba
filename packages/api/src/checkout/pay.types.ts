import type { PaymentStatus } from '@once/db/schema';
import { z } from 'zod';

/**
 * What a client may send to pay: product ids and quantities, nothing priced, every list and
 * string bounded so no request makes the server price, fingerprint or store more. The
 * catalogue's quantity range (1 to 99 per product, after merging lines) and the empty cart are
 * the domain's (`quantity_out_of_range`, `empty_cart`), so REST and tRPC refuse them alike; the
 * schema refuses shapes and sizes (`invalid_input`, with zod's issues).
 */
export const payInput = z.object({
  lines: z
    .array(
      z.object({
        productId: z
          .string()
          .min(1, 'productId must not be empty')
          .max(100, 'productId must be at most 100 characters'),
        quantity: z
          .number()
          .int('quantity must be a whole number')
          .min(0, 'quantity must not be negative')
          .max(1000, 'quantity must be at most 1000'),
      }),
    )
    .max(50, 'a cart has at most 50 lines'),
  // 254: RFC 5321's limit of a forward path.
  customerEmail: z
    .email('customerEmail must be an email address')
    .max(254, 'customerEmail must be at most 254 characters')
    .optional(),
  /**
   * A processor payment method id (test mode: `pm_card_visa`, `pm_card_chargeDeclined`, ...),
   * as a card form would hand it over. Omitted: the worker's default test card.
   */
  paymentMethod: z
    .string()
    .max(99, 'paymentMethod must be at most 99 characters')
    .regex(/^pm_[A-Za-z0-9_]{1,96}$/, 'paymentMethod must look like pm_card_visa')
    .optional(),
  /**
   * `manual`: the worker's confirm only authorises (`capture_method: manual`); an operator
   * captures or voids it later. Default `automatic`: the confirm charges.
   */
  capture: z.enum(['automatic', 'manual']).optional(),
});
export type PayInput = z.infer<typeof payInput>;

/**
 * The response of `checkout.pay` (and the body of `POST /api/v1/payments`). JSON-only. A new
 * payment answers `processing`; a retry that finds the payment its key already made (see
 * `pay`) answers that payment's current status.
 */
export interface PayResult {
  paymentId: string;
  status: PaymentStatus;
  amount: number;
  currency: string;
  lines: { productId: string; name: string; quantity: number; unitAmount: number }[];
  customerEmail: string | null;
  /** ISO 8601; strings, not Dates, so a replayed response equals the first one. */
  createdAt: string;
}
