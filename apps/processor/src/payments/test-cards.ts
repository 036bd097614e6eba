import { type FormParams, readObject, readString } from '../stripe/form-params.ts';
import { invalidParam, resourceMissing } from '../stripe/stripe-error.ts';
import { newObjectId } from '../stripe/stripe-operation.ts';

/** A charge attempt the card network declines, as Stripe answers it. */
interface Decline {
  code: string;
  declineCode: string;
  message: string;
  /** The request parameter Stripe blames, if any. */
  param?: string;
}

/** `code` is `card_declined` unless the card names another. */
function declined(
  declineCode: string,
  message = 'Your card was declined.',
  code = 'card_declined',
  param?: string,
): Decline {
  return { code, declineCode, message, ...(param ? { param } : {}) };
}

/** What a test card does; a card that names nothing is approved and refunds at once. */
interface TestCard {
  declined?: Decline;
  /** Every payment needs a 3-D Secure challenge before it is charged. */
  authenticate?: true;
  /**
   * Stripe's "Simulate an asynchronous refund" cards: `pending_then_succeeded` starts
   * `pending` and later succeeds (`refund.updated`); `succeeded_then_failed` starts
   * `succeeded` and later fails (`refund.failed`, funds back).
   */
  refund?: 'pending_then_succeeded' | 'succeeded_then_failed';
}

/** Stripe's documented test cards by `pm_card_*` PaymentMethod: the number and what it does. */
const TEST_CARDS: Record<string, TestCard & { number: string }> = {
  pm_card_visa: { number: '4242424242424242' },
  pm_card_mastercard: { number: '5555555555554444' },
  pm_card_chargeDeclined: { number: '4000000000000002', declined: declined('generic_decline') },
  pm_card_chargeDeclinedInsufficientFunds: {
    number: '4000000000009995',
    declined: declined('insufficient_funds', 'Your card has insufficient funds.'),
  },
  pm_card_chargeDeclinedLostCard: { number: '4000000000009987', declined: declined('lost_card') },
  pm_card_chargeDeclinedExpiredCard: {
    number: '4000000000000069',
    declined: declined('expired_card', 'Your card has expired.', 'expired_card', 'exp_month'),
  },
  pm_card_chargeDeclinedIncorrectCvc: {
    number: '4000000000000127',
    declined: declined(
      'incorrect_cvc',
      "Your card's security code is incorrect.",
      'incorrect_cvc',
      'cvc',
    ),
  },
  pm_card_chargeDeclinedProcessingError: {
    number: '4000000000000119',
    declined: declined(
      'processing_error',
      'An error occurred while processing your card. Try again in a little bit.',
      'processing_error',
    ),
  },
  pm_card_threeDSecure2Required: { number: '4000000000003220', authenticate: true },
  pm_card_authenticationRequired: { number: '4000002760003184', authenticate: true },
  // Declined after a completed challenge.
  pm_card_threeDSecureRequiredChargeDeclined: {
    number: '4000008400001629',
    authenticate: true,
    declined: declined('generic_decline'),
  },
  pm_card_pendingRefund: { number: '4000000000007726', refund: 'pending_then_succeeded' },
  pm_card_refundFail: { number: '4000000000005126', refund: 'succeeded_then_failed' },
};

/** What a test card number does; an unknown number is an approved card. */
export function testCard(cardNumber: string): TestCard {
  const number = cardNumber.replace(/\s/g, '');
  return Object.values(TEST_CARDS).find((card) => card.number === number) ?? {};
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
    const cardNumber = TEST_CARDS[paymentMethod]?.number;
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
