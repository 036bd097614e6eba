import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cancelKeyFor,
  confirmKeyFor,
  downstreamKeyFor,
  newJobId,
  newPaymentId,
} from './payment-ids.ts';

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

  it('no two payments, and no two calls of one payment, share a processor key', () => {
    const paymentId = fc.stringMatching(/^pay_[0-9a-f]{32}$/);
    fc.assert(
      fc.property(paymentId, paymentId, (a, b) => {
        const keysOf = (id: string) => {
          const downstream = downstreamKeyFor(id);
          return [downstream, confirmKeyFor(downstream), cancelKeyFor(downstream)];
        };
        const all = [...keysOf(a), ...keysOf(b)];
        expect(new Set(all).size).toBe(a === b ? 3 : 6);
        // The same payment always gets the same keys.
        expect(keysOf(a)).toEqual(keysOf(a));
      }),
    );
  });
});
