import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { declineCodeOf, FALLBACK_DECLINE_CODE } from './decline-code.ts';

const code = fc.stringMatching(/^[a-z_]{1,30}$/);
const absent = fc.constantFrom(null, undefined);

describe('the decline code recorded on a payment', () => {
  it('a decline is recorded by its decline code, else its code, else the generic card_declined', () => {
    expect(declineCodeOf({ decline_code: 'insufficient_funds', code: 'card_declined' })).toBe(
      'insufficient_funds',
    );
    expect(declineCodeOf({ decline_code: null, code: 'expired_card' })).toBe('expired_card');
    expect(declineCodeOf({})).toBe(FALLBACK_DECLINE_CODE);
    expect(declineCodeOf(null)).toBe('card_declined');
  });

  it('the decline code wins over the code, whatever the code is', () => {
    fc.assert(
      fc.property(code, fc.option(code, { nil: undefined }), (declineCode, other) => {
        expect(declineCodeOf({ decline_code: declineCode, code: other })).toBe(declineCode);
      }),
    );
  });

  it('without a decline code, the code; without either, the fallback', () => {
    fc.assert(
      fc.property(absent, code, absent, (noDecline, other, noCode) => {
        expect(declineCodeOf({ decline_code: noDecline, code: other })).toBe(other);
        expect(declineCodeOf({ decline_code: noDecline, code: noCode })).toBe('card_declined');
      }),
    );
  });
});
