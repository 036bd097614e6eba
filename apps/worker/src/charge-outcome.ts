import Stripe from 'stripe';

/**
 * What one charge attempt tells us, in the terms of the failure policy (DESIGN.md):
 * - `succeeded` / `declined`: the processor's definite answer; record it, never retry.
 * - `ambiguous`: the request may or may not have charged (timeout, reset, 5xx, 409 key in
 *   use, 429). Retry later with the SAME downstream key: the processor's idempotency turns
 *   a retry of a charge that happened into a replay of it.
 * - `rejected`: the processor refused the request itself (4xx other than a decline). Not
 *   retried blindly; the payment becomes `unknown` and the reconciler asks the ledger,
 *   because an earlier ambiguous attempt with the same key may still have charged.
 */
export type ChargeOutcome =
  | { kind: 'succeeded'; paymentIntentId: string }
  | { kind: 'declined'; code: string; message?: string; paymentIntentId?: string }
  | { kind: 'ambiguous'; reason: string }
  | { kind: 'rejected'; code: string; message?: string };

/**
 * Maps a PaymentIntent returned by `create` with `confirm: true` to an outcome. Anything
 * not yet final (`processing`, `requires_action`) is ambiguous: a later attempt or the
 * reconciler will see the final state.
 *
 * @example
 * outcomeOfPaymentIntent({ id: 'pi_1', status: 'succeeded' }); // { kind: 'succeeded', paymentIntentId: 'pi_1' }
 */
export function outcomeOfPaymentIntent(intent: {
  id: string;
  status: string;
  last_payment_error?: { code?: string; decline_code?: string; message?: string } | null;
}): ChargeOutcome {
  if (intent.status === 'succeeded') return { kind: 'succeeded', paymentIntentId: intent.id };
  if (intent.status === 'requires_payment_method' || intent.status === 'canceled') {
    const error = intent.last_payment_error;
    return {
      kind: 'declined',
      code: error?.decline_code ?? error?.code ?? 'card_declined',
      message: error?.message,
      paymentIntentId: intent.id,
    };
  }
  return { kind: 'ambiguous', reason: `payment_intent_${intent.status}` };
}

/**
 * Maps an error thrown by the `stripe` SDK (or anything else thrown while calling it) to an
 * outcome. Unknown errors count as ambiguous: when in doubt, assume the charge may exist.
 *
 * @example
 * outcomeOfChargeError(new Stripe.errors.StripeConnectionError({ message: 'reset' })); // ambiguous
 */
export function outcomeOfChargeError(error: unknown): ChargeOutcome {
  if (!(error instanceof Stripe.errors.StripeError)) {
    return { kind: 'ambiguous', reason: error instanceof Error ? error.message : String(error) };
  }
  const status = error.statusCode;
  if (error instanceof Stripe.errors.StripeCardError || status === 402) {
    return {
      kind: 'declined',
      code: error.decline_code ?? error.code ?? 'card_declined',
      message: error.message,
      paymentIntentId: error.payment_intent?.id,
    };
  }
  if (error instanceof Stripe.errors.StripeConnectionError || status === undefined) {
    return { kind: 'ambiguous', reason: `connection: ${error.message}` };
  }
  if (status >= 500 || status === 409 || status === 429) {
    return { kind: 'ambiguous', reason: `http_${status}${error.code ? `_${error.code}` : ''}` };
  }
  return {
    kind: 'rejected',
    code:
      error.code ??
      (error instanceof Stripe.errors.StripeIdempotencyError
        ? 'idempotency_error'
        : `http_${status}`),
    message: error.message,
  };
}
