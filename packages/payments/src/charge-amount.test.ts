import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chargeMatchesPayment } from './charge-amount.ts';

/** A three-letter currency code in random case: `usd`, `USD`, `uSd`. */
const currency = fc
  .tuple(
    fc.constantFrom('usd', 'eur', 'jpy', 'gbp'),
    fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
  )
  .map(([code, upper]) =>
    [...code].map((letter, i) => (upper[i] ? letter.toUpperCase() : letter)).join(''),
  );
const amount = fc.integer({ min: 1, max: 99_999_999 });

describe('a charge is the payment’s only for its amount and currency', () => {
  it('a charge matches a payment only for the same amount and currency, in any case', () => {
    expect(
      chargeMatchesPayment({ amount: 3999, currency: 'USD' }, { amount: 3999, currency: 'usd' }),
    ).toBe(true);
    expect(
      chargeMatchesPayment({ amount: 3998, currency: 'usd' }, { amount: 3999, currency: 'usd' }),
    ).toBe(false);
    expect(
      chargeMatchesPayment({ amount: 3999, currency: 'eur' }, { amount: 3999, currency: 'usd' }),
    ).toBe(false);
  });

  it('matches whatever the case of either currency, both ways round', () => {
    fc.assert(
      fc.property(amount, currency, currency, (value, a, b) => {
        const same = a.toLowerCase() === b.toLowerCase();
        const charge = { amount: value, currency: a };
        const payment = { amount: value, currency: b };
        expect(chargeMatchesPayment(charge, payment)).toBe(same);
        expect(chargeMatchesPayment(payment, charge)).toBe(same);
      }),
    );
  });

  it('never matches another amount, by one unit or by any', () => {
    fc.assert(
      fc.property(amount, amount, currency, (a, b, code) => {
        fc.pre(a !== b);
        expect(
          chargeMatchesPayment({ amount: a, currency: code }, { amount: b, currency: code }),
        ).toBe(false);
        expect(
          chargeMatchesPayment({ amount: a + 1, currency: code }, { amount: a, currency: code }),
        ).toBe(false);
      }),
    );
  });
});
