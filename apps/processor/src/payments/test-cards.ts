import { type FormParams, readObject, readString } from '../stripe/form-params.ts';
import { invalidParam, resourceMissing } from '../stripe/stripe-error.ts';
import { newObjectId } from '../stripe/stripe-operation.ts';

/** What the card network says about a charge attempt. */
export type CardOutcome =
  | { kind: 'approved' }
  | {
      kind: 'declined';
      code: string;
      declineCode: string;
      message: string;
      /** The request parameter Stripe blames, if any. */
      param?: string;
    };

/** A decline as Stripe answers it: `code` is `card_declined` unless the card names another. */
function declined(
  declineCode: string,
  message = 'Your card was declined.',
  code = 'card_declined',
  param?: string,
): CardOutcome {
  return { kind: 'declined', code, declineCode, message, ...(param ? { param } : {}) };
}

/** Stripe's documented test card numbers and what they do. Unknown numbers are approved. */
const OUTCOME_BY_NUMBER: Record<string, CardOutcome> = {
  '4242424242424242': { kind: 'approved' },
  '5555555555554444': { kind: 'approved' },
  '4000000000000002': declined('generic_decline'),
  '4000000000009995': declined('insufficient_funds', 'Your card has insufficient funds.'),
  '4000000000009987': declined('lost_card'),
  '4000000000000069': declined(
    'expired_card',
    'Your card has expired.',
    'expired_card',
    'exp_month',
  ),
  '4000000000000127': declined(
    'incorrect_cvc',
    "Your card's security code is incorrect.",
    'incorrect_cvc',
    'cvc',
  ),
  '4000000000000119': declined(
    'processing_error',
    'An error occurred while processing your card. Try again in a little bit.',
    'processing_error',
  ),
  // 3-D Secure is required, and the payment is declined after a completed challenge.
  '4000008400001629': declined('generic_decline'),
};

/** Stripe's test cards that require 3-D Secure authentication on every payment. */
const AUTHENTICATION_REQUIRED = new Set([
  '4000000000003220',
  '4000002760003184',
  '4000008400001629',
]);

/** Whether a payment with this card needs a 3-D Secure challenge before it is charged. */
export function requiresAuthentication(cardNumber: string): boolean {
  return AUTHENTICATION_REQUIRED.has(cardNumber.replace(/\s/g, ''));
}

/** Stripe's `pm_card_*` test PaymentMethods and the card numbers they stand for. */
const NUMBER_BY_TEST_PAYMENT_METHOD: Record<string, string> = {
  pm_card_visa: '4242424242424242',
  pm_card_mastercard: '5555555555554444',
  pm_card_chargeDeclined: '4000000000000002',
  pm_card_chargeDeclinedInsufficientFunds: '4000000000009995',
  pm_card_chargeDeclinedLostCard: '4000000000009987',
  pm_card_chargeDeclinedExpiredCard: '4000000000000069',
  pm_card_chargeDeclinedIncorrectCvc: '4000000000000127',
  pm_card_chargeDeclinedProcessingError: '4000000000000119',
  pm_card_threeDSecure2Required: '4000000000003220',
  pm_card_authenticationRequired: '4000002760003184',
  pm_card_threeDSecureRequiredChargeDeclined: '4000008400001629',
  pm_card_pendingRefund: '4000000000007726',
  pm_card_refundFail: '4000000000005126',
};

/**
 * How a refund of a charge on this card behaves (Stripe's "Simulate an asynchronous refund"
 * cards): `pending_then_succeeded` starts `pending` and later succeeds (`refund.updated`);
 * `succeeded_then_failed` starts `succeeded` and later fails (`refund.failed`, funds back).
 * Every other card's refund succeeds at once and stays so.
 */
export type RefundBehavior = 'immediate' | 'pending_then_succeeded' | 'succeeded_then_failed';

const REFUND_BEHAVIOR_BY_NUMBER: Record<string, RefundBehavior> = {
  '4000000000007726': 'pending_then_succeeded',
  '4000000000005126': 'succeeded_then_failed',
};

export function refundBehaviorOfCard(cardNumber: string): RefundBehavior {
  return REFUND_BEHAVIOR_BY_NUMBER[cardNumber.replace(/\s/g, '')] ?? 'immediate';
}

/** The outcome of charging a test card number. */
export function outcomeOfCard(cardNumber: string): CardOutcome {
  return OUTCOME_BY_NUMBER[cardNumber.replace(/\s/g, '')] ?? { kind: 'approved' };
}

/**
 * Reads `payment_method` (a `pm_card_*` test token) or `payment_method_data[card][number]`
 * (a raw test card number) from the params: the id the PaymentIntent shows and the test card
 * number that decides the outcome. Undefined when neither is present.
 */
export function resolvePaymentMethod(
  params: FormParams,
): { id: string; cardNumber: string } | undefined {
  const paymentMethod = readString(params, 'payment_method');
  if (paymentMethod !== undefined) {
    const cardNumber = NUMBER_BY_TEST_PAYMENT_METHOD[paymentMethod];
    if (!cardNumber) throw resourceMissing('PaymentMethod', paymentMethod, 'payment_method');
    return { id: paymentMethod, cardNumber };
  }
  const data = readObject(params, 'payment_method_data');
  if (data === undefined) return undefined;
  const card = readObject(data, 'card');
  const number = card ? readString(card, 'number') : undefined;
  if (!number || !/^\d{12,19}$/.test(number.replace(/\s/g, ''))) {
    throw invalidParam(
      'payment_method_data[card][number]',
      'Your card number is incorrect.',
      'incorrect_number',
    );
  }
  return { id: newObjectId('pm'), cardNumber: number.replace(/\s/g, '') };
}
