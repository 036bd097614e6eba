import { eq } from 'drizzle-orm';
import { paymentIntents } from '../db/schema/index.ts';
import { readUrl } from '../stripe/form-params.ts';
import { MISSING_PAYMENT_METHOD, unexpectedState } from '../stripe/stripe-error.ts';
import type { StripeOperation } from '../stripe/stripe-operation.ts';
import { chargePaymentIntent } from './charge-payment-intent.ts';
import { loadPaymentIntent } from './read-payment-intents.ts';
import { resolvePaymentMethod } from './test-cards.ts';

/** `POST /v1/payment_intents/:id/confirm`: charges the PaymentIntent with its payment method. */
export const confirmPaymentIntent: StripeOperation = async (tx, input) => {
  const id = input.pathParams.id!;
  let intent = await loadPaymentIntent(tx, input.account.id, id, { forUpdate: true });
  // An authorised intent (`requires_capture`) is captured, never confirmed again.
  if (['succeeded', 'canceled', 'requires_capture'].includes(intent.status)) {
    throw unexpectedState(
      `You cannot confirm this PaymentIntent because it has a status of ${intent.status}.`,
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
    throw unexpectedState(MISSING_PAYMENT_METHOD, 'payment_method');
  }
  return chargePaymentIntent(tx, intent, input);
};
