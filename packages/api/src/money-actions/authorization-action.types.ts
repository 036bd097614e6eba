import type { PaymentActionKind, PaymentActionStatus } from '@once/db/schema';
import { z } from 'zod';

const paymentId = z.string().min(1).max(100);

/** Capture an authorised payment: all of it, or `amount` (minor units) and release the rest. */
export const capturePaymentInput = z.object({
  paymentId,
  amount: z.number().int('amount must be a whole number').positive().optional(),
});

/** Void an authorised payment: release the whole authorisation, capture nothing. */
export const voidPaymentInput = z.object({ paymentId });

/**
 * The answer to a capture or void: the action as written with its job (`pending`: the worker
 * will move the money). JSON-only, so a replay equals the first answer.
 */
export interface PaymentActionResult {
  actionId: string;
  paymentId: string;
  kind: PaymentActionKind;
  status: PaymentActionStatus;
  /** A capture's amount; null: all that is authorised (a capture) or nothing (a void). */
  amount: number | null;
  /** ISO 8601. */
  createdAt: string;
}
