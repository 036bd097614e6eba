import { chargeMatchesPayment, type Money } from '@once/payments';
import type Stripe from 'stripe';

/**
 * Finds a payment's intent by its metadata (payment id OR downstream key) when its id was never
 * recorded. Search is eventually consistent: "nothing found" is a hint, never a proof. Of
 * several, the one that went furthest wins; only one for the payment's own amount and currency
 * counts (metadata is the merchant's to set), so no other is ever adopted or settled on.
 */
export async function findPaymentIntentByMetadata(
  processor: Stripe,
  tenantId: string,
  /** The payment's downstream key is its checkout's: it also names an earlier payment's intents. */
  ref: { paymentId: string; downstreamKey: string },
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
  // Charged first, then anything in between, then one still unconfirmed, then one canceled.
  const rank = (intent: Stripe.PaymentIntent) => FURTHEST_FIRST[intent.status] ?? 1;
  return [...intents].sort((a, b) => rank(a) - rank(b))[0] ?? null;
}

const FURTHEST_FIRST: Record<string, number> = {
  succeeded: 0,
  requires_confirmation: 2,
  canceled: 3,
};

/** Stripe's search language quotes values with single quotes and escapes with a backslash. */
function escapeSearchValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
}
