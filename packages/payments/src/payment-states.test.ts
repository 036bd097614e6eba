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
  it('the transition table: processing and unknown may go anywhere but to the ends of a capture, authorized only to them, the rest nowhere', () => {
    expect(paymentTransitions).toEqual({
      processing: ['processing', 'succeeded', 'declined', 'unknown', 'failed', 'authorized'],
      unknown: ['processing', 'succeeded', 'declined', 'unknown', 'failed', 'authorized'],
      authorized: ['captured', 'voided'],
      succeeded: [],
      declined: [],
      failed: [],
      captured: [],
      voided: [],
    });
  });

  it('a terminal payment never moves, to any state', () => {
    expect(terminalPaymentStatuses).toEqual([
      'succeeded',
      'declined',
      'failed',
      'captured',
      'voided',
    ]);
    for (const from of terminalPaymentStatuses) {
      for (const to of paymentStatuses) expect(canMovePayment(from, to)).toBe(false);
    }
  });

  it('a charge outcome is written only over processing and unknown; a capture outcome only over authorized', () => {
    expect(unsettledPaymentStatuses).toEqual(['processing', 'unknown']);
    for (const to of [
      'processing',
      'succeeded',
      'declined',
      'unknown',
      'failed',
      'authorized',
    ] as const) {
      expect(statusesMovableTo(to)).toEqual(['processing', 'unknown']);
    }
    expect(statusesMovableTo('captured')).toEqual(['authorized']);
    expect(statusesMovableTo('voided')).toEqual(['authorized']);
  });

  it('every state is exactly one of terminal, unsettled, or authorized (waiting for an operator)', () => {
    for (const s of paymentStatuses) {
      expect(isTerminalPayment(s)).toBe(terminalPaymentStatuses.includes(s));
    }
    expect([...terminalPaymentStatuses, ...unsettledPaymentStatuses, 'authorized'].sort()).toEqual(
      [...paymentStatuses].sort(),
    );
  });

  it('whatever answers arrive, in any order, the first definite one stays', () => {
    // Each element: a settler (worker, webhook, reconciler) asking to move the payment.
    fc.assert(
      fc.property(fc.array(status, { maxLength: 12 }), (asked) => {
        let current: PaymentStatus = 'processing';
        const visited: PaymentStatus[] = [];
        for (const to of asked) {
          if (canMovePayment(current, to)) current = to;
          visited.push(current);
        }
        const firstTerminal = visited.find((s) => isTerminalPayment(s));
        if (firstTerminal) expect(current).toBe(firstTerminal);
        else expect([...unsettledPaymentStatuses, 'authorized']).toContain(current);
        // An authorised payment only ever ends captured or voided, never charged again.
        if (visited.includes('authorized') && firstTerminal) {
          expect(['captured', 'voided']).toContain(firstTerminal);
        }
      }),
    );
  });

  it('a move is allowed exactly from the states statusesMovableTo lists, and never from a terminal one', () => {
    fc.assert(
      fc.property(status, status, (from, to) => {
        expect(canMovePayment(from, to)).toBe(statusesMovableTo(to).includes(from));
        if (isTerminalPayment(from)) expect(canMovePayment(from, to)).toBe(false);
      }),
    );
  });
});
