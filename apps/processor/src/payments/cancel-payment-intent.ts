import { readString } from '../stripe/read-params.ts';
import { invalidParam } from '../stripe/stripe-error.ts';
import type { StripeOperation } from '../stripe/stripe-operation.ts';
import { loadPaymentIntent } from './load-payment-intent.ts';
import { voidPaymentIntent } from './void-payment-intent.ts';

/** Stripe's accepted `cancellation_reason` values. */
const CANCELLATION_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer', 'abandoned'];

/**
 * `POST /v1/payment_intents/:id/cancel`, with Stripe's semantics: an intent that has not
 * been charged (`requires_payment_method`, `requires_confirmation`, `requires_action`)
 * becomes `canceled` and can never be confirmed again; an authorised one
 * (`requires_capture`) is voided, its authorisation released; a `succeeded`, `processing`
 * or already `canceled` one is refused with `payment_intent_unexpected_state`.
 *
 * Cancel and confirm both take the intent's row lock before they read its status, so
 * they are serialised: a confirm that was held (slow network, the `delay` fault, which
 * waits before the transaction) and arrives after a cancel finds `canceled` and charges
 * nothing; a cancel that arrives after the charge committed finds `succeeded` and is
 * refused. "Canceled" is therefore proof that this intent never charged and never will.
 */
export const cancelPaymentIntent: StripeOperation = async (tx, input) => {
  const id = input.pathParams.id!;
  const reason = readString(input.params, 'cancellation_reason');
  if (reason !== undefined && !CANCELLATION_REASONS.includes(reason)) {
    throw invalidParam(
      'cancellation_reason',
      `Invalid cancellation_reason: must be one of ${CANCELLATION_REASONS.join(', ')}.`,
    );
  }
  const intent = await loadPaymentIntent(tx, input.account.id, id, { forUpdate: true });
  if (
    intent.status === 'succeeded' ||
    intent.status === 'processing' ||
    intent.status === 'canceled'
  ) {
    throw invalidParam(
      'intent',
      `You cannot cancel this PaymentIntent because it has a status of ${intent.status}.`,
      'payment_intent_unexpected_state',
    );
  }
  const rendered = await voidPaymentIntent(tx, intent, {
    reason: reason ?? null,
    idempotencyKey: input.idempotencyKey,
  });
  return { status: 200, body: rendered };
};
