import { eq, sql } from 'drizzle-orm';
import type { ProcessorTransaction } from '../db/client.ts';
import { charges, type paymentIntents } from '../db/schema/index.ts';
import { updateAndAnnounce } from './charge-payment-intent.ts';

type PaymentIntentRow = typeof paymentIntents.$inferSelect;

/**
 * Cancels a PaymentIntent that has moved no money (the caller checked its status and holds
 * its row lock): it becomes `canceled` with `reason`, and an authorisation it held
 * (`requires_capture`) is released, shown as Stripe does: the charge's whole amount
 * refunded, nothing capturable. Sends `payment_intent.canceled`.
 */
export async function voidPaymentIntent(
  tx: ProcessorTransaction,
  intent: PaymentIntentRow,
  cancellation: { reason: string | null; idempotencyKey: string | null },
): Promise<ReturnType<typeof updateAndAnnounce>> {
  if (intent.status === 'requires_capture' && intent.latestCharge) {
    await tx
      .update(charges)
      .set({ amountRefunded: sql`${charges.amount}` })
      .where(eq(charges.id, intent.latestCharge));
  }
  return updateAndAnnounce(
    tx,
    intent,
    {
      status: 'canceled',
      cancellationReason: cancellation.reason,
      canceledAt: sql`now()`,
      amountCapturable: 0,
      captureBefore: null,
      nextAction: null,
      actionIdempotencyKey: null,
    },
    'payment_intent.canceled',
    cancellation.idempotencyKey,
  );
}
