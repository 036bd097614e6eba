import type { ProcessorDeclineError } from './decline-code.ts';

/** Stripe's error code on an intent whose 3-D Secure challenge the shopper failed. */
const AUTHENTICATION_FAILURE_CODE = 'payment_intent_authentication_failure';

/**
 * Whether a processor error (an intent's `last_payment_error`) is a failed 3-D Secure
 * challenge: the bank refused the shopper, not the card. The payment is `failed` with this
 * code, never `declined`; the worker, the webhook receiver and the reconciler all read it
 * through this, so whoever sees it first records it the same way.
 */
export function isAuthenticationFailure(error: ProcessorDeclineError | null | undefined): boolean {
  return error?.code === AUTHENTICATION_FAILURE_CODE;
}
