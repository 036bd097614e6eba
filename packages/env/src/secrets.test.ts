import { describe, expect, it } from 'vitest';
import { text } from './env-fields.ts';
import { parseEnv } from './parse-env.ts';
import { generateSecrets, KNOWN_DEMO_SECRETS, SECRET_VARIABLES } from './secrets.ts';

const shape = { SESSION_SECRET: text({ default: undefined }), PORT: text({ default: '1' }) };

describe('secrets in production', () => {
  it('refuses every known demo value in one line that says what to do and never repeats it', () => {
    for (const value of KNOWN_DEMO_SECRETS) {
      let message = '';
      try {
        parseEnv(shape, { NODE_ENV: 'production', SESSION_SECRET: value });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(
        /^SESSION_SECRET is a demo value written in the repository, refused with NODE_ENV=production: generate one with `openssl rand -hex 32`/,
      );
      expect(message).not.toContain(value);
      expect(message).not.toContain('\n');
    }
  });

  it('refuses a secret shorter than 32 characters, padded demo values too', () => {
    expect(() =>
      parseEnv(shape, { NODE_ENV: 'production', SESSION_SECRET: 'short-but-not-known' }),
    ).toThrow(
      /^SESSION_SECRET is 19 characters, too short for NODE_ENV=production \(at least 32\)/,
    );
    expect(() =>
      parseEnv(shape, { NODE_ENV: 'production', SESSION_SECRET: ' once-admin ' }),
    ).toThrow(/demo value/);
  });

  it('takes a generated secret in production, and anything outside production', () => {
    const secrets = generateSecrets();
    expect(Object.keys(secrets).sort()).toEqual([...SECRET_VARIABLES].sort());
    expect(
      parseEnv(shape, { NODE_ENV: 'production', SESSION_SECRET: secrets.SESSION_SECRET })
        .SESSION_SECRET,
    ).toBe(secrets.SESSION_SECRET);
    expect(parseEnv(shape, { NODE_ENV: 'test', SESSION_SECRET: 'once-admin' }).SESSION_SECRET).toBe(
      'once-admin',
    );
    // Unset is the variable's own schema's business (here: allowed).
    expect(parseEnv(shape, { NODE_ENV: 'production' }).SESSION_SECRET).toBeUndefined();
  });

  it('refuses a weak secret the process holds even when this shape does not read it', () => {
    expect(() =>
      parseEnv(
        { PORT: text({ default: '1' }) },
        {
          NODE_ENV: 'production',
          PROCESSOR_ADMIN_TOKEN: 'once-admin',
        },
      ),
    ).toThrow(/^PROCESSOR_ADMIN_TOKEN is a demo value written in the repository/);
  });

  it('makes a new set every time, long enough and none known', () => {
    const [a, b] = [generateSecrets(), generateSecrets()];
    for (const name of SECRET_VARIABLES) {
      expect(a[name]).not.toBe(b[name]);
      expect(a[name].length).toBeGreaterThanOrEqual(64);
      expect(KNOWN_DEMO_SECRETS).not.toContain(a[name]);
    }
  });
});
