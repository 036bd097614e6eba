import { describe, expect, it } from 'vitest';
import { resolvePaymentMethod, testCard } from './test-cards.ts';

describe('test cards', () => {
  it('resolves only the documented pm_card_* ids, not the names every object has', () => {
    expect(resolvePaymentMethod({ payment_method: 'pm_card_visa' })).toEqual({
      id: 'pm_card_visa',
      cardNumber: '4242424242424242',
    });
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      expect(() => resolvePaymentMethod({ payment_method: name })).toThrowError(
        `No such PaymentMethod: '${name}'`,
      );
    }
  });

  it('knows a card by its number, spaces or not; an unknown number is a plain approved card', () => {
    expect(testCard('4000 0084 0000 1629')).toMatchObject({
      authenticate: true,
      declined: { declineCode: 'generic_decline' },
    });
    expect(testCard('4000000000007726').refund).toBe('pending_then_succeeded');
    expect(testCard('4111111111111111')).toEqual({});
  });
});
