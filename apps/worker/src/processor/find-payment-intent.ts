import { chargeMatchesPayment, type Money } from '@once/payments';
import type Stripe from 'stripe';

/** What names a payment's intents in their metadata. */
export interface PaymentIntentRef {
  paymentId: string;
  /** The payment's downstream key: its checkout's, so it also names the intents of an earlier payment of that checkout whose row was lost. */
  downstreamKey: string;
}

/**
 * Finds a payment's intent by its metadata (payment id OR downstream key) when its id was never
 * recorded. Search is eventually consistent: "nothing found" is a hint, never a proof. Of
 * several, the one that went furthest wins; only one for the payment's own amount and currency
 * counts (metadata is the merchant's to set), so no other is ever adopted or settled on.
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
