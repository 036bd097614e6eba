/** A Stripe test card the checkout offers, and the test PaymentMethod that stands for it. */
export interface TestCard {
  number: string;
  label: string;
  /** Stripe's `pm_card_*` id; the worker charges this PaymentMethod at the processor. */
  paymentMethod: string;
  expected: 'succeeds' | 'declined' | 'insufficient funds' | 'asks your bank (3-D Secure)';
}

/** Stripe's documented test cards (https://docs.stripe.com/testing), the ones the mock honours. */
export const TEST_CARDS: readonly TestCard[] = [
  {
    number: '4242 4242 4242 4242',
    label: 'Visa',
    paymentMethod: 'pm_card_visa',
    expected: 'succeeds',
  },
  {
    number: '4000 0000 0000 0002',
    label: 'Visa (declined)',
    paymentMethod: 'pm_card_chargeDeclined',
    expected: 'declined',
  },
  {
    number: '4000 0000 0000 9995',
    label: 'Visa (insufficient funds)',
    paymentMethod: 'pm_card_chargeDeclinedInsufficientFunds',
    expected: 'insufficient funds',
  },
  {
    number: '4000 0000 0000 3220',
    label: 'Visa (3-D Secure)',
    paymentMethod: 'pm_card_threeDSecure2Required',
    expected: 'asks your bank (3-D Secure)',
  },
];

export const DEFAULT_TEST_CARD = TEST_CARDS[0]!;
