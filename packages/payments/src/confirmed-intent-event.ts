import type { ProcessorPaymentIntentEvent } from './apply-processor-event.ts';

/** The fields of a processor (Stripe-shaped) PaymentIntent, as the processor answers when asked. */
export type ProcessorPaymentIntent = Omit<
  ProcessorPaymentIntentEvent['data']['object'],
  'metadata'
> & { status: string };

/**
 * The event to apply, built from the intent the processor returned when asked (its status,
 * amount, currency and error) for OUR payment (its id and tenant from our records, not from
 * the processor's metadata), or undefined while the intent is not final (nothing to settle:
 * the worker and the reconciler finish it). A failed charge leaves the intent waiting for
 * another payment method with the error that declined it, as the worker reads it. An event's
 * own object is the state "at the time of the change" (Stripe), a hint only.
 */
export function confirmedEventOf(
  eventId: string,
  intent: ProcessorPaymentIntent,
  ours: { tenantId: string; paymentId: string },
): ProcessorPaymentIntentEvent | undefined {
  const declined =
    (intent.status === 'requires_payment_method' || intent.status === 'canceled') &&
    intent.last_payment_error;
  // Canceled with no charge error: a cancel (an expired authorisation, a void, an abandoned
  // challenge); `applyProcessorEvent` settles only the processor's own end of an authorisation.
  const canceled = intent.status === 'canceled' && !intent.last_payment_error;
  if (intent.status !== 'succeeded' && !declined && !canceled) return undefined;
  return {
    id: eventId,
    type:
      intent.status === 'succeeded'
        ? 'payment_intent.succeeded'
        : canceled
          ? 'payment_intent.canceled'
          : 'payment_intent.payment_failed',
    data: {
      object: {
        id: intent.id,
        amount: intent.amount,
        currency: intent.currency,
        metadata: { payment_id: ours.paymentId, tenant_id: ours.tenantId },
        cancellation_reason: intent.cancellation_reason ?? null,
        last_payment_error: intent.last_payment_error
          ? {
              code: intent.last_payment_error.code ?? null,
              decline_code: intent.last_payment_error.decline_code ?? null,
              message: intent.last_payment_error.message ?? null,
            }
          : null,
      },
    },
  };
}
