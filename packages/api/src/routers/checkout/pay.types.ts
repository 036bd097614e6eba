import { z } from 'zod';

/**
 * What a client may send to pay: product ids and quantities, nothing priced. Quantity ranges
 * and the empty cart are checked by the domain (stable codes `quantity_out_of_range`,
 * `empty_cart`), not here, so REST and tRPC refuse them with the same code.
 */
export const payInput = z.object({
  lines: z
    .array(
      z.object({
        productId: z.string().min(1).max(100),
        quantity: z.number().int(),
      }),
    )
    .max(50),
  customerEmail: z.email().max(254).optional(),
  /**
   * A processor payment method id (test mode: `pm_card_visa`, `pm_card_chargeDeclined`, ...),
   * as a card form would hand it over. Omitted: the worker's default test card.
   */
  paymentMethod: z
    .string()
    .regex(/^pm_[A-Za-z0-9_]{1,96}$/)
    .optional(),
});
export type PayInput = z.infer<typeof payInput>;

/** The response of `checkout.pay` (and the body of `POST /api/v1/payments`). JSON-only. */
export interface PayResult {
  paymentId: string;
  status: 'processing';
  amount: number;
  currency: string;
  lines: { productId: string; name: string; quantity: number; unitAmount: number }[];
  customerEmail: string | null;
  /** ISO 8601; strings, not Dates, so a replayed response equals the first one. */
  createdAt: string;
}
