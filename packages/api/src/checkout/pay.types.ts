import type { PaymentStatus } from '@once/db/schema';
import { z } from 'zod';

/**
 * Bounds of the checkout input. Every list and string a client sends is bounded here, so no
 * request can make the server price, fingerprint or store more than this.
 */
const PAY_INPUT_LIMITS = {
  /** Lines of one cart (lines naming the same product are merged when priced). */
  maxLines: 50,
  /** Characters of a product id. */
  maxProductIdLength: 100,
  /**
   * The largest quantity the schema lets through. The catalogue's own range (1 to 99 per
   * product, after merging lines) is the domain's `quantity_out_of_range`; this bound only
   * stops absurd numbers before anything is summed or fingerprinted.
   */
  maxQuantity: 1000,
  /** RFC 5321's limit of a forward path. */
  maxEmailLength: 254,
  /** Characters after `pm_` of a payment method id. */
  maxPaymentMethodIdLength: 96,
} as const;

const L = PAY_INPUT_LIMITS;

/**
 * What a client may send to pay: product ids and quantities, nothing priced. The catalogue's
 * quantity range and the empty cart are checked by the domain (stable codes
 * `quantity_out_of_range`, `empty_cart`), not here, so REST and tRPC refuse them with the
 * same code; the schema refuses shapes and sizes (`invalid_input`, with zod's issues).
 */
export const payInput = z.object({
  lines: z
    .array(
      z.object({
        productId: z
          .string()
          .min(1, 'productId must not be empty')
          .max(
            L.maxProductIdLength,
            `productId must be at most ${L.maxProductIdLength} characters`,
          ),
        quantity: z
          .number()
          .int('quantity must be a whole number')
          .min(0, 'quantity must not be negative')
          .max(L.maxQuantity, `quantity must be at most ${L.maxQuantity}`),
      }),
    )
    .max(L.maxLines, `a cart has at most ${L.maxLines} lines`),
  customerEmail: z
    .email('customerEmail must be an email address')
    .max(L.maxEmailLength, `customerEmail must be at most ${L.maxEmailLength} characters`)
    .optional(),
  /**
   * A processor payment method id (test mode: `pm_card_visa`, `pm_card_chargeDeclined`, ...),
   * as a card form would hand it over. Omitted: the worker's default test card.
   */
  paymentMethod: z
    .string()
    .max(
      3 + L.maxPaymentMethodIdLength,
      `paymentMethod must be at most ${3 + L.maxPaymentMethodIdLength} characters`,
    )
    .regex(
      new RegExp(`^pm_[A-Za-z0-9_]{1,${L.maxPaymentMethodIdLength}}$`),
      'paymentMethod must look like pm_card_visa',
    )
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
