import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readCookie, signSessionValue, verifySessionValue } from './session-cookie.ts';

const SECRET = 'session-cookie-test-secret';
const now = new Date('2026-01-01T00:00:00Z');

describe('session cookie', () => {
  it('round-trips the tenant while unexpired', () => {
    const value = signSessionValue('tenant_a', SECRET, now);
    expect(verifySessionValue(value, SECRET, now)).toMatchObject({
      tenantId: 'tenant_a',
      role: 'shopper',
    });
    expect(
      verifySessionValue(value, SECRET, new Date(now.getTime() + 25 * 3600_000)),
    ).toBeUndefined();
    expect(verifySessionValue(value, 'other-secret-abcdefgh', now)).toBeUndefined();
  });

  it('rejects any single-character change', () => {
    const value = signSessionValue('tenant_a', SECRET, now);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(
      fc.property(
        fc.nat({ max: value.length - 1 }),
        fc.constantFrom(...alphabet),
        (index, char) => {
          fc.pre(value[index] !== char);
          const tampered = value.slice(0, index) + char + value.slice(index + 1);
          const verified = verifySessionValue(tampered, SECRET, now)?.tenantId;
          // base64url's last char may carry unused bits: a change there can decode to the same bytes.
          expect(verified === undefined || verified === 'tenant_a').toBe(true);
          if (verified === 'tenant_a') {
            expect(Buffer.from(tampered.split('.')[1] ?? '', 'base64url')).toEqual(
              Buffer.from(value.split('.')[1]!, 'base64url'),
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('carries the role and a fresh session id; a cookie from before roles is a shopper', () => {
    const operator = verifySessionValue(
      signSessionValue('tenant_a', SECRET, now, { role: 'operator' }),
      SECRET,
      now,
    );
    const shopper = verifySessionValue(signSessionValue('tenant_a', SECRET, now), SECRET, now);
    expect(operator?.role).toBe('operator');
    expect(shopper?.role).toBe('shopper');
    expect(operator?.sessionId).not.toBe(shopper?.sessionId);
    // Signed like the cookies issued before roles existed: `{ t, exp }` only.
    const encoded = Buffer.from(JSON.stringify({ t: 'tenant_a', exp: 9e9 })).toString('base64url');
    const signature = createHmac('sha256', SECRET).update(encoded).digest('base64url');
    const legacy = verifySessionValue(`${encoded}.${signature}`, SECRET, now);
    expect(legacy).toMatchObject({ tenantId: 'tenant_a', role: 'shopper' });
    expect(legacy?.sessionId).toMatch(/^[\w-]{16}$/);
  });

  it('reads one cookie among several', () => {
    const headers = new Headers({ cookie: 'a=1; once_session=abc%2Edef; b=2' });
    expect(readCookie(headers, 'once_session')).toBe('abc.def');
    expect(readCookie(headers, 'missing')).toBeUndefined();
  });
});
