import { type PaymentEventWriter, recordPaymentEvents } from '@once/db/payment-events';
import type { ApplyOutcome } from '@once/payments';

/**
 * Records what a processor webhook did to a payment, as an arrow from the processor's lane
 * to the webhook receiver's: `webhook.applied` (it moved the payment), `webhook.ignored` (the
 * payment was already terminal, or the amount differs), `webhook.duplicate` (a redelivery
 * answered from the stored answer). Called in the transaction that applied it; a duplicate is
 * recorded where its stored answer is given. No payment, no event. `via: 'backfill'`: the
 * worker applied it from the processor's list of undelivered events, not from a delivery.
 */
export async function recordWebhookEvent(
  db: PaymentEventWriter,
  tenantId: string,
  event: { id: string; type: string },
  outcome: ApplyOutcome,
  duplicate: boolean,
  via?: 'backfill',
): Promise<void> {
  if (outcome.kind === 'payment_not_found' || !outcome.paymentId) return;
  const kind = duplicate
    ? 'webhook.duplicate'
    : outcome.kind === 'applied'
      ? 'webhook.applied'
      : 'webhook.ignored';
  await recordPaymentEvents(db, [
    {
      tenantId,
      paymentId: outcome.paymentId,
      actor: 'processor',
      kind,
      detail: {
        to: 'webhook',
        eventId: event.id,
        type: event.type,
        outcome: outcome.kind,
        ...('status' in outcome ? { status: outcome.status } : {}),
        ...(via ? { via } : {}),
      },
    },
  ]);
}
