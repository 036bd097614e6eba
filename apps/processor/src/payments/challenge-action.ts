import type { paymentIntents } from '../db/schema/index.ts';

type PaymentIntentRow = typeof paymentIntents.$inferSelect;

/**
 * Stripe's `next_action` for a card that requires 3-D Secure: with a `return_url`,
 * `redirect_to_url` (send the shopper to `url`; they come back to `return_url`); without one,
 * `use_stripe_sdk` (Stripe.js opens the challenge itself), here pointing at the same hosted
 * page. The page is this processor's own (`http/three-d-secure.ts`), found by the intent's id
 * and client secret.
 *
 * @example
 * challengeAction(intent, 'http://127.0.0.1:4100') // { type: 'redirect_to_url', redirect_to_url: { url, return_url } }
 */
export function challengeAction(
  intent: PaymentIntentRow,
  challengeBaseUrl: string,
): Record<string, unknown> {
  const url = new URL(`/three_d_secure/${intent.id}`, challengeBaseUrl);
  url.searchParams.set('client_secret', intent.clientSecret);
  if (intent.returnUrl) {
    return {
      type: 'redirect_to_url',
      redirect_to_url: { url: url.toString(), return_url: intent.returnUrl },
    };
  }
  return {
    type: 'use_stripe_sdk',
    use_stripe_sdk: { type: 'three_d_secure_redirect', stripe_js: url.toString() },
  };
}
