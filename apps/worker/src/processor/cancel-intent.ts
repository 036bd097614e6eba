import { cancelKeyFor } from '@once/payments';
import type Stripe from 'stripe';

/** What a cancel the reconciler sent came to. */
export interface CancelAnswer {
  /** The processor canceled the intent: proof that nobody was charged. */
  canceled: boolean;
  /** The payment's cancel key, under which it was sent (for the decision's timeline event). */
  cancelKey: string;
  /** Why it was refused, or that no answer came; undefined when the processor answered. */
  error?: unknown;
}

/**
 * Cancels a payment's intent (`cancellation_reason: abandoned`) under the payment's cancel
 * key, so a retried cancel whose first answer was lost replays it. Only the processor's
 * `canceled` is proof; a refusal (it charged, is processing, or the shopper answered the
 * challenge meanwhile) or no answer settles nothing: the next look reads the intent again.
 */
export async function cancelIntent(
  processor: Stripe,
  intentId: string,
  downstreamKey: string,
): Promise<CancelAnswer> {
  const cancelKey = cancelKeyFor(downstreamKey);
  try {
    const intent = await processor.paymentIntents.cancel(
      intentId,
      { cancellation_reason: 'abandoned' },
      { idempotencyKey: cancelKey },
    );
    return { canceled: intent.status === 'canceled', cancelKey };
  } catch (error) {
    return { canceled: false, cancelKey, error };
  }
}
