import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bindHost, DEFAULT_BIND_HOST, integer, required, text, wholeNumber } from './env-fields.ts';
import { type EnvShape, parseEnv } from './parse-env.ts';

/** The one line `parseEnv` refuses `env` with under `shape` (fails the test if it accepts). */
function refusalOf(shape: EnvShape, env: Record<string, string | undefined>): string {
  try {
    parseEnv(shape, env);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

/** Any text (control characters too) but digits with optional spaces around: never a whole number. */
const notDigits = fc
  .oneof(
    fc.string({ unit: 'binary' }),
    fc
      .tuple(fc.string(), fc.constantFrom('\n', '\r\n', '\r'), fc.string())
      .map((parts) => parts.join('')),
  )
  .filter((raw) => raw.trim() !== '' && !/^\d+$/.test(raw.trim()));

describe('integer', () => {
  const port = { PORT: integer({ default: 3000, min: 1, max: 65_535 }) };
  const lease = { LEASE_MS: integer({ default: 30_000, min: 100 }) };

  it('takes its default when unset or empty', () => {
    expect(parseEnv(port, {}).PORT).toBe(3000);
    expect(parseEnv(port, { PORT: '' }).PORT).toBe(3000);
  });

  it('takes every integer in its range as itself', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 65_535 }), (n) => {
        expect(parseEnv(port, { PORT: String(n) }).PORT).toBe(n);
      }),
    );
  });

  it('refuses an integer out of range with the range and the value as given', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 65_536 })), (n) => {
        expect(refusalOf(port, { PORT: String(n) })).toBe(
          `PORT must be an integer from 1 to 65535, got "${n}"`,
        );
      }),
    );
    expect(refusalOf(lease, { LEASE_MS: '99' })).toBe(
      'LEASE_MS must be an integer >= 100, got "99"',
    );
  });

  it('refuses what is not an integer, quoting it as JSON so the line stays one line', () => {
    for (const raw of ['abc', '1.5', 'NaN', 'Infinity', '30s']) {
      expect(refusalOf(lease, { LEASE_MS: raw })).toBe(
        `LEASE_MS must be an integer >= 100, got ${JSON.stringify(raw)}`,
      );
    }
    expect(refusalOf(lease, { LEASE_MS: '1\n2' })).toBe(
      'LEASE_MS must be an integer >= 100, got "1\\n2"',
    );
  });
});

describe('wholeNumber', () => {
  const describeIt = 'a whole number of seconds from 1 to 86400 (default 300)';
  const tolerance = {
    TOLERANCE: wholeNumber({ default: 300, min: 1, max: 86_400, describe: describeIt }),
  };

  it('takes its default when unset, empty or blank, and digits with spaces around them', () => {
    expect(parseEnv(tolerance, {}).TOLERANCE).toBe(300);
    expect(parseEnv(tolerance, { TOLERANCE: '' }).TOLERANCE).toBe(300);
    expect(parseEnv(tolerance, { TOLERANCE: '   ' }).TOLERANCE).toBe(300);
    expect(parseEnv(tolerance, { TOLERANCE: ' 600 ' }).TOLERANCE).toBe(600);
  });

  it('refuses numbers not written as digits (6e2, 600.0, -5, 0x10), saying what it wants', () => {
    for (const raw of ['6e2', '600.0', '-5', '0x10', '+5']) {
      expect(refusalOf(tolerance, { TOLERANCE: raw })).toBe(
        `TOLERANCE must be ${describeIt}, got "${raw}"`,
      );
    }
  });

  it('refuses digits out of range', () => {
    expect(refusalOf(tolerance, { TOLERANCE: '0' })).toBe(
      `TOLERANCE must be ${describeIt}, got "0"`,
    );
    expect(refusalOf(tolerance, { TOLERANCE: '86401' })).toBe(
      `TOLERANCE must be ${describeIt}, got "86401"`,
    );
  });

  it('refuses any other text in one line, whatever it holds', () => {
    fc.assert(
      fc.property(notDigits, (raw) => {
        const message = refusalOf(tolerance, { TOLERANCE: raw });
        expect(message.startsWith(`TOLERANCE must be ${describeIt}, got `)).toBe(true);
        expect(message).not.toMatch(/[\n\r]/);
      }),
    );
  });
});

describe('text and required', () => {
  it('text: unset or empty takes the default; with trim, blank does too and the value is trimmed', () => {
    const plain = { URL: text({ default: 'http://127.0.0.1:4100' }) };
    const trimmed = { URL: text({ default: undefined, trim: true }) };
    expect(parseEnv(plain, {}).URL).toBe('http://127.0.0.1:4100');
    expect(parseEnv(plain, { URL: '' }).URL).toBe('http://127.0.0.1:4100');
    expect(parseEnv(plain, { URL: ' x ' }).URL).toBe(' x ');
    expect(parseEnv(trimmed, { URL: '  ' }).URL).toBeUndefined();
    expect(parseEnv(trimmed, { URL: ' x ' }).URL).toBe('x');
  });

  it('required: unset or empty is refused with its own message, not prefixed twice', () => {
    const message = 'DATABASE_URL is not set: point it at the application database';
    const shape = { DATABASE_URL: required(message) };
    expect(refusalOf(shape, {})).toBe(message);
    expect(refusalOf(shape, { DATABASE_URL: '' })).toBe(message);
    expect(parseEnv(shape, { DATABASE_URL: 'postgres://x' }).DATABASE_URL).toBe('postgres://x');
    // A message that does not start with the name gets it in front.
    expect(refusalOf({ SECRET: required('is not set') }, {})).toBe('SECRET is not set');
  });
});

describe('bindHost', () => {
  const shape = { HOST: bindHost() };

  it('defaults to every interface and takes IPv4 and IPv6 literals', () => {
    expect(parseEnv(shape, {}).HOST).toBe(DEFAULT_BIND_HOST);
    expect(DEFAULT_BIND_HOST).toBe('0.0.0.0');
    for (const host of ['127.0.0.1', '10.1.2.3', '::', '::1']) {
      expect(parseEnv(shape, { HOST: host }).HOST).toBe(host);
    }
  });

  it('refuses a name: it would be resolved once and could bind somewhere unexpected', () => {
    for (const host of ['web', 'localhost', '127.0.0.1:3000', ' 127.0.0.1']) {
      expect(refusalOf(shape, { HOST: host })).toBe(
        `HOST must be an IP address to listen on (0.0.0.0: every interface, 127.0.0.1: this machine only), got ${JSON.stringify(host)}`,
      );
    }
  });
});

describe('parseEnv', () => {
  const shape = {
    PORT: integer({ default: 3000, min: 1 }),
    HOST: bindHost(),
    DATABASE_URL: required('DATABASE_URL is not set'),
  };

  it('reads only the variables of its shape and applies every default', () => {
    const env = parseEnv(shape, { DATABASE_URL: 'postgres://x', UNRELATED: 'ignored' });
    expect(env).toEqual({ PORT: 3000, HOST: '0.0.0.0', DATABASE_URL: 'postgres://x' });
  });

  it('names the first variable in shape order that is wrong, in one line', () => {
    expect(refusalOf(shape, { PORT: '0', HOST: 'web' })).toBe(
      'PORT must be an integer >= 1, got "0"',
    );
    expect(refusalOf(shape, { HOST: 'web' })).toMatch(/^HOST must be an IP address/);
    expect(refusalOf(shape, {})).toBe('DATABASE_URL is not set');
  });

  it('refuses the environment the same way every time', () => {
    fc.assert(
      fc.property(notDigits, notDigits, (port, host) => {
        const env = { PORT: port, HOST: host, DATABASE_URL: 'postgres://x' };
        let first: unknown;
        let second: unknown;
        try {
          first = parseEnv(shape, env);
        } catch (error) {
          first = (error as Error).message;
        }
        try {
          second = parseEnv(shape, env);
        } catch (error) {
          second = (error as Error).message;
        }
        expect(second).toEqual(first);
        if (typeof first === 'string') expect(first).not.toMatch(/[\n\r]/);
      }),
    );
  });
});
