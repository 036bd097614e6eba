import type { RefundStatus } from '@once/db/schema';
import { z } from 'zod';

/** Refund a succeeded or captured payment: all that is left, or `amount` (minor units). */
export const refundPaymentInput = z.object({
  paymentId: z.string().min(1).max(100),
  amount: z.number().int('amount must be a whole number').positive().optional(),
  reason: z.enum(['duplicate', 'fraudulent', 'requested_by_customer']).optional(),
});

/** The answer to a refund: the refund as written with its job. JSON-only, replayed as is. */
export interface RefundResult {
  refundId: string;
  paymentId: string;
  amount: number;
  status: RefundStatus;
  /** ISO 8601. */
  createdAt: string;
}
