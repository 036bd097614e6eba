import { type PaymentStatus, paymentStatuses } from '@once/db/schema';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canMovePayment,
  isTerminalPayment,
  paymentTransitions,
  statusesMovableTo,
  terminalPaymentStatuses,
  unsettledPaymentStatuses,
} from './payment-states.ts';

const status = fc.constantFrom(...paymentStatuses);

describe('payment states', () => {
  it("the transition table: processing and unknown may go anywhere but to the ends of a capture or a challenge, authorized only to a capture's ends, requires_action only to a challenge's, the rest nowhere", () => {
    const charge = ['succeeded', 'declined', 'unknown', 'failed', 'authorized', 'requires_action'];
    expect(paymentTransitions).toEqual({
      processing: ['processing', ...charge],
      unknown: ['processing', ...charge],
      authorized: ['captured', 'voided'],
      requires_action: ['succeeded', 'declined', 'failed', 'authorized', 'canceled'],
      succeeded: [],
      declined: [],
      failed: [],
      captured: [],
      voided: [],
      canceled: [],
    });
  });

  it('a terminal payment never moves, to any state', () => {
    expect(terminalPaymentStatuses).toEqual([
      'succeeded',
      'declined',
      'failed',
      'captured',
      'voided',
      'canceled',
    ]);
    for (const from of terminalPaymentStatuses) {
      for (const to of paymentStatuses) expect(canMovePayment(from, to)).toBe(false);
    }
  });

  it('a charge outcome is written only over processing and unknown (and a definite one over requires_action); a capture outcome only over authorized', () => {
    expect(unsettledPaymentStatuses).toEqual(['processing', 'unknown']);
    for (const to of ['processing', 'unknown', 'requires_action'] as const) {
      expect(statusesMovableTo(to)).toEqual(['processing', 'unknown']);
    }
    for (const to of ['succeeded', 'declined', 'failed', 'authorized'] as const) {
      expect(statusesMovableTo(to)).toEqual(['processing', 'unknown', 'requires_action']);
    }
    expect(statusesMovableTo('captured')).toEqual(['authorized']);
    expect(statusesMovableTo('voided')).toEqual(['authorized']);
    expect(statusesMovableTo('canceled')).toEqual(['requires_action']);
  });

  it('a payment waiting for a 3-D Secure answer is never charged again: it only ends, and never goes back in flight', () => {
    expect(canMovePayment('requires_action', 'processing')).toBe(false);
    expect(canMovePayment('requires_action', 'unknown')).toBe(false);
    expect(canMovePayment('requires_action', 'requires_action')).toBe(false);
    expect(isTerminalPayment('requires_action')).toBe(false);
    // Only a challenge is abandoned: a charge in flight or an authorisation is never `canceled`.
    for (const from of ['processing', 'unknown', 'authorized'] as const) {
      expect(canMovePayment(from, 'canceled')).toBe(false);
    }
  });

  it('every state is exactly one of terminal, unsettled, authorized (waiting for an operator) or requires_action (waiting for the shopper)', () => {
    for (const s of paymentStatuses) {
      expect(isTerminalPayment(s)).toBe(terminalPaymentStatuses.includes(s));
    }
    expect(
      [
        ...terminalPaymentStatuses,
        ...unsettledPaymentStatuses,
        'authorized',
        'requires_action',
      ].sort(),
    ).toEqual([...paymentStatuses].sort());
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
        else {
          expect([...unsettledPaymentStatuses, 'authorized', 'requires_action']).toContain(current);
        }
        // An authorised payment only ever ends captured or voided, never charged again.
        if (visited.includes('authorized') && firstTerminal) {
          expect(['captured', 'voided']).toContain(firstTerminal);
        }
        // A payment that waited for a challenge never went back in flight afterwards.
        const challenged = visited.indexOf('requires_action');
        if (challenged >= 0) {
          expect(visited.slice(challenged).some((s) => s === 'processing' || s === 'unknown')).toBe(
            false,
          );
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
