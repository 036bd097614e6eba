import type { FormParams } from '../stripe/form-params.ts';
import { newObjectId } from '../stripe/object-ids.ts';
import { readObject, readString } from '../stripe/read-params.ts';
import { invalidParam, resourceMissing } from '../stripe/stripe-error.ts';
import { cardNumberOfTestPaymentMethod } from './test-cards.ts';

export interface ResolvedPaymentMethod {
  /** The id shown on the PaymentIntent. */
  id: string;
  /** The test card number that decides the outcome. */
  cardNumber: string;
}

/**
 * Reads `payment_method` (a `pm_card_*` test token) or `payment_method_data[card][number]`
 * (a raw test card number) from the params. Undefined when neither is present.
 */
export function resolvePaymentMethod(params: FormParams): ResolvedPaymentMethod | undefined {
  const paymentMethod = readString(params, 'payment_method');
  if (paymentMethod !== undefined) {
    const cardNumber = cardNumberOfTestPaymentMethod(paymentMethod);
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
