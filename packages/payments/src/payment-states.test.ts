import { describe, expect, it } from 'vitest';
import { chargeMatchesPayment } from './charge-amount.ts';
import { declineCodeOf, FALLBACK_DECLINE_CODE } from './decline-code.ts';
import {
  cancelKeyFor,
  confirmKeyFor,
  downstreamKeyFor,
  newJobId,
  newPaymentId,
} from './payment-ids.ts';
import {
  canMovePayment,
  paymentStatuses,
  statusesMovableTo,
  terminalPaymentStatuses,
  unsettledPaymentStatuses,
} from './payment-states.ts';

describe('payment states', () => {
  it('a terminal payment never moves, to any state', () => {
    expect(terminalPaymentStatuses).toEqual(['succeeded', 'declined', 'failed']);
    for (const from of terminalPaymentStatuses) {
      for (const to of paymentStatuses) expect(canMovePayment(from, to)).toBe(false);
    }
  });

  it('an unsettled payment may move anywhere, so only processing and unknown are ever updated', () => {
    expect(unsettledPaymentStatuses).toEqual(['processing', 'unknown']);
    for (const to of paymentStatuses) {
      expect(statusesMovableTo(to)).toEqual(['processing', 'unknown']);
    }
  });
});

describe('payment ids and keys', () => {
  it('payment and job ids have one form: a prefix and 32 hex digits', () => {
    expect(newPaymentId()).toMatch(/^pay_[0-9a-f]{32}$/);
    expect(newJobId()).toMatch(/^job_[0-9a-f]{32}$/);
    expect(newJobId()).not.toBe(newJobId());
  });

  it('the processor keys are derived from the payment, so every attempt sends the same', () => {
    const key = downstreamKeyFor('pay_1');
    expect(key).toBe('once_pay_pay_1');
    expect(confirmKeyFor(key)).toBe('once_pay_pay_1:confirm');
    expect(cancelKeyFor(key)).toBe('once_pay_pay_1:cancel');
  });
});

describe('declines and amounts', () => {
  it('a decline is recorded by its decline code, else its code, else the generic card_declined', () => {
    expect(declineCodeOf({ decline_code: 'insufficient_funds', code: 'card_declined' })).toBe(
      'insufficient_funds',
    );
    expect(declineCodeOf({ decline_code: null, code: 'expired_card' })).toBe('expired_card');
    expect(declineCodeOf({})).toBe(FALLBACK_DECLINE_CODE);
    expect(declineCodeOf(null)).toBe('card_declined');
  });

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
});
