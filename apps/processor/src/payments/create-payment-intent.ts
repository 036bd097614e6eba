import { randomBytes } from 'node:crypto';
import { paymentIntents } from '../db/schema/index.ts';
import {
  readBoolean,
  readInteger,
  readMetadata,
  readString,
  readUrl,
} from '../stripe/form-params.ts';
import {
  invalidParam,
  MISSING_PAYMENT_METHOD,
  missingParam,
  unexpectedState,
} from '../stripe/stripe-error.ts';
import { newObjectId, type StripeOperation } from '../stripe/stripe-operation.ts';
import { chargePaymentIntent } from './charge-payment-intent.ts';
import { renderPaymentIntent } from './render-objects.ts';
import { resolvePaymentMethod } from './test-cards.ts';

/**
 * Stripe's `capture_method` values: `manual` authorises at confirm and charges at capture;
 * here both automatic ones charge at confirm.
 */
const CAPTURE_METHODS = ['automatic', 'automatic_async', 'manual'];

/** `POST /v1/payment_intents`: creates a PaymentIntent and, with `confirm=true`, charges it. */
export const createPaymentIntent: StripeOperation = async (tx, input) => {
  const { account, params } = input;
  const amount = readInteger(params, 'amount');
  if (amount === undefined) throw missingParam('amount');
  if (amount < 1 || amount > 99_999_999) {
    throw invalidParam(
      'amount',
      'Amount must be at least 1 and at most 99999999.',
      'amount_too_small',
    );
  }
  const currency = readString(params, 'currency')?.toLowerCase();
  if (currency === undefined) throw missingParam('currency');
  if (!/^[a-z]{3}$/.test(currency))
    throw invalidParam('currency', `Invalid currency: ${currency}.`);
  const metadata = readMetadata(params);
  const captureMethod = readString(params, 'capture_method') ?? 'automatic';
  if (!CAPTURE_METHODS.includes(captureMethod)) {
    throw invalidParam(
      'capture_method',
      `Invalid capture_method: must be one of ${CAPTURE_METHODS.join(', ')}.`,
    );
  }
  const confirm = readBoolean(params, 'confirm') ?? false;
  const paymentMethod = resolvePaymentMethod(params);
  if (confirm && !paymentMethod) {
    throw unexpectedState(MISSING_PAYMENT_METHOD, 'payment_method');
  }

  const id = newObjectId('pi');
  const [intent] = await tx
    .insert(paymentIntents)
    .values({
      id,
      accountId: account.id,
      amount,
      currency,
      status: paymentMethod ? 'requires_confirmation' : 'requires_payment_method',
      paymentMethod: paymentMethod?.id ?? null,
      cardNumber: paymentMethod?.cardNumber ?? null,
      description: readString(params, 'description') ?? null,
      customer: readString(params, 'customer') ?? null,
      metadata,
      captureMethod,
      returnUrl: readUrl(params, 'return_url') ?? null,
      clientSecret: `${id}_secret_${randomBytes(12).toString('hex')}`,
    })
    .returning();
  if (confirm) return chargePaymentIntent(tx, intent!, input);
  return { status: 200, body: renderPaymentIntent(intent!) };
};
