/** An amount in the currency's smallest unit, and the currency (ISO 4217, any case). */
export interface Money {
  amount: number;
  currency: string;
}

/**
 * Whether a processor charge (a PaymentIntent) is for the payment's amount and currency. A
 * charge for another amount is not this payment's charge, even if its metadata names the
 * payment (metadata is the merchant's to set): nothing settles a payment on it.
 */
export function chargeMatchesPayment(charge: Money, payment: Money): boolean {
  return (
    charge.amount === payment.amount &&
    charge.currency.toLowerCase() === payment.currency.toLowerCase()
  );
}
