import { describe, expect, it } from 'vitest';
import { displayState, stepsOf } from './checkout-state.ts';

const idle = { phase: 'idle' } as const;

describe('displayState for 3-D Secure', () => {
  it('a payment waiting for the challenge is "waiting for your bank" before the shopper leaves, and "bank answered" once back on the return page', () => {
    expect(displayState(idle, 'requires_action', { watching: true, unconfirmed: false })).toBe(
      'requires_action',
    );
    expect(
      displayState(idle, 'requires_action', {
        watching: true,
        unconfirmed: false,
        returnedFromBank: true,
      }),
    ).toBe('bank_answered');
  });

  it('on the return page the processor’s outcome wins as soon as it is known', () => {
    for (const status of ['succeeded', 'failed', 'canceled'] as const) {
      expect(
        displayState(idle, status, { watching: true, unconfirmed: false, returnedFromBank: true }),
      ).toBe(status);
    }
  });

  it('waiting for the bank is not settled yet; an abandoned challenge is', () => {
    expect(stepsOf('requires_action')).toEqual({ done: ['sent', 'accepted'], current: 'settled' });
    expect(stepsOf('bank_answered')).toEqual({ done: ['sent', 'accepted'], current: 'settled' });
    expect(stepsOf('canceled')).toEqual({
      done: ['sent', 'accepted', 'settled'],
      current: undefined,
    });
  });
});
