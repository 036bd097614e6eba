import { eq } from 'drizzle-orm';
import { paymentIntents } from '../db/schema/index.ts';
import { readUrl } from '../stripe/read-params.ts';
import { invalidParam } from '../stripe/stripe-error.ts';
import type { StripeOperation } from '../stripe/stripe-operation.ts';
import { chargePaymentIntent } from './charge-payment-intent.ts';
import { loadPaymentIntent } from './load-payment-intent.ts';
import { resolvePaymentMethod } from './resolve-payment-method.ts';

/** `POST /v1/payment_intents/:id/confirm`: charges the PaymentIntent with its payment method. */
export const confirmPaymentIntent: StripeOperation = async (tx, input) => {
  const id = input.pathParams.id!;
  let intent = await loadPaymentIntent(tx, input.account.id, id, { forUpdate: true });
  // An authorised intent (`requires_capture`) is captured, never confirmed again.
  if (['succeeded', 'canceled', 'requires_capture'].includes(intent.status)) {
    throw invalidParam(
      'intent',
      `You cannot confirm this PaymentIntent because it has a status of ${intent.status}.`,
      'payment_intent_unexpected_state',
    );
  }
  const paymentMethod = resolvePaymentMethod(input.params);
  const returnUrl = readUrl(input.params, 'return_url');
  if (paymentMethod || returnUrl) {
    const [updated] = await tx
      .update(paymentIntents)
      .set({
        ...(paymentMethod
          ? { paymentMethod: paymentMethod.id, cardNumber: paymentMethod.cardNumber }
          : {}),
        ...(returnUrl ? { returnUrl } : {}),
      })
      .where(eq(paymentIntents.id, id))
      .returning();
    intent = updated!;
  }
  if (!intent.paymentMethod) {
    throw invalidParam(
      'payment_method',
      'You cannot confirm this PaymentIntent because it is missing a payment method.',
      'payment_intent_unexpected_state',
    );
  }
  return chargePaymentIntent(tx, intent, input);
};
