import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canMovePayment,
  isTerminalPayment,
  type PaymentStatus,
  paymentStatuses,
  paymentTransitions,
  statusesMovableTo,
  terminalPaymentStatuses,
  unsettledPaymentStatuses,
} from './payment-states.ts';

const status = fc.constantFrom(...paymentStatuses);

describe('payment states', () => {
  it('the transition table: processing and unknown may go anywhere, the rest nowhere', () => {
    expect(paymentTransitions).toEqual({
      processing: ['processing', 'succeeded', 'declined', 'unknown', 'failed'],
      unknown: ['processing', 'succeeded', 'declined', 'unknown', 'failed'],
      succeeded: [],
      declined: [],
      failed: [],
    });
  });

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

  it('every state is either terminal or unsettled, never both', () => {
    for (const s of paymentStatuses) {
      expect(isTerminalPayment(s)).toBe(terminalPaymentStatuses.includes(s));
      expect(isTerminalPayment(s)).toBe(!unsettledPaymentStatuses.includes(s));
    }
    expect([...terminalPaymentStatuses, ...unsettledPaymentStatuses].sort()).toEqual(
      [...paymentStatuses].sort(),
    );
  });

  it('whatever answers arrive, in any order, the first definite one stays', () => {
    // Each element: a settler (worker, webhook, reconciler) asking to move the payment.
    fc.assert(
      fc.property(fc.array(status, { maxLength: 12 }), (asked) => {
        let current: PaymentStatus = 'processing';
        for (const to of asked) if (canMovePayment(current, to)) current = to;
        const firstDefinite = asked.find((to) => isTerminalPayment(to));
        if (firstDefinite) expect(current).toBe(firstDefinite);
        else expect(unsettledPaymentStatuses).toContain(current);
      }),
    );
  });

  it('a move is allowed exactly from the states statusesMovableTo lists', () => {
    fc.assert(
      fc.property(status, status, (from, to) => {
        expect(canMovePayment(from, to)).toBe(statusesMovableTo(to).includes(from));
        expect(canMovePayment(from, to)).toBe(!isTerminalPayment(from));
      }),
    );
  });
});
