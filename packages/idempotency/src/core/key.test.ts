import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isIdempotencyError } from './errors.ts';
import { parseIdempotencyKey } from './key.ts';

const printable = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  minLength: 1,
  maxLength: 255,
});

describe('parseIdempotencyKey', () => {
  it('accepts bare tokens and RFC 8941 sf-strings', () => {
    expect(parseIdempotencyKey('abc-123')).toBe('abc-123');
    expect(parseIdempotencyKey('"8e03978e-40d5-43e8-bc93-6894a57f9324"')).toBe(
      '8e03978e-40d5-43e8-bc93-6894a57f9324',
    );
    expect(parseIdempotencyKey('"with \\"quote\\" and \\\\"')).toBe('with "quote" and \\');
  });

  it('treats an absent or blank header as missing', () => {
    expect(parseIdempotencyKey(null)).toBeUndefined();
    expect(parseIdempotencyKey(undefined)).toBeUndefined();
    expect(parseIdempotencyKey('   ')).toBeUndefined();
  });

  it('rejects empty quoted, too long, non-ASCII and malformed keys with idempotency_key_invalid', () => {
    for (const bad of [
      '""',
      'x'.repeat(256),
      'clé',
      'tab\there',
      '"unterminated',
      '"a";p=1',
      '"ü"',
    ]) {
      let error: unknown;
      try {
        parseIdempotencyKey(bad);
      } catch (e) {
        error = e;
      }
      expect(isIdempotencyError(error) && error.code, bad).toBe('idempotency_key_invalid');
    }
    expect(parseIdempotencyKey('x'.repeat(255))).toHaveLength(255);
  });

  it('fuzz: any string either parses to 1..255 printable ASCII or throws idempotency_key_invalid', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (raw) => {
        try {
          const key = parseIdempotencyKey(raw);
          if (key !== undefined) {
            expect(key.length).toBeGreaterThanOrEqual(1);
            expect(key.length).toBeLessThanOrEqual(255);
            expect(/^[\x20-\x7e]+$/.test(key)).toBe(true);
          } else {
            expect(raw.trim()).toBe('');
          }
        } catch (error) {
          expect(isIdempotencyError(error) && error.code).toBe('idempotency_key_invalid');
        }
      }),
      { numRuns: 5000 },
    );
  });

  it('fuzz: every valid key round-trips bare (when it is token-like) and as an sf-string', () => {
    fc.assert(
      fc.property(
        printable.filter((k) => k.trim() === k && k.length > 0),
        (key) => {
          const quoted = `"${key.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
          expect(parseIdempotencyKey(quoted)).toBe(key);
          if (!key.startsWith('"')) expect(parseIdempotencyKey(key)).toBe(key);
        },
      ),
      { numRuns: 5000 },
    );
  });
});
