import { chargeMatchesPayment, type Money } from '@once/payments';
import type Stripe from 'stripe';

/** What names a payment's intents in their metadata. */
export interface PaymentIntentRef {
  paymentId: string;
  /** The payment's downstream key: its checkout's, so it also names the intents of an earlier payment of that checkout whose row was lost. */
  downstreamKey: string;
}

/**
 * Looks for the PaymentIntent of a payment by the metadata the worker sets on it
 * (`payment_id`, `downstream_key`, `tenant_id`), for when its id was never recorded (the
 * create's answer was lost, or the payment was re-created after its row was lost and the
 * processor no longer remembers the create's key): by payment id OR downstream key. Search is eventually consistent: "nothing found" is a hint, never a proof that
 * nothing exists. If several exist (a create re-sent after the processor forgot its key),
 * the one that went furthest wins: succeeded, then declined or in flight, then waiting.
 * Only an intent for the payment's own amount and currency counts: metadata is the
 * merchant's to set, and an intent for another amount is not this payment's charge (the
 * webhook receiver refuses it too), so it is never adopted, confirmed or settled on.
 */
export async function findPaymentIntentByMetadata(
  processor: Stripe,
  tenantId: string,
  ref: PaymentIntentRef,
  payment: Money,
): Promise<Stripe.PaymentIntent | null> {
  const result = await processor.paymentIntents.search({
    query: `metadata['payment_id']:'${escapeSearchValue(ref.paymentId)}' OR metadata['downstream_key']:'${escapeSearchValue(ref.downstreamKey)}'`,
    limit: 100,
  });
  // Metadata is the tenant's to set; make sure the intent is really this tenant's payment.
  const intents = result.data.filter(
    (intent) => intent.metadata?.tenant_id === tenantId && chargeMatchesPayment(intent, payment),
  );
  const rank = (intent: Stripe.PaymentIntent): number =>
    intent.status === 'succeeded'
      ? 0
      : intent.status === 'requires_confirmation'
        ? 2
        : intent.status === 'canceled'
          ? 3
          : 1;
  return [...intents].sort((a, b) => rank(a) - rank(b))[0] ?? null;
}

/** Stripe's search language quotes values with single quotes and escapes with a backslash. */
function escapeSearchValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
}
