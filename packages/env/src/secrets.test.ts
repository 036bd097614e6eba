import { describe, expect, it } from 'vitest';
import { text } from './env-fields.ts';
import { parseEnv } from './parse-env.ts';
import {
  DEMO_API_KEY_VARIABLES,
  generateSecrets,
  KNOWN_DEMO_SECRETS,
  SECRET_VARIABLES,
} from './secrets.ts';

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
    // Every secret but the demo merchants' API keys: `npm run demo` keeps the public ones.
    const launcherMakes = SECRET_VARIABLES.filter(
      (name) => !(DEMO_API_KEY_VARIABLES as readonly string[]).includes(name),
    );
    expect(Object.keys(secrets).sort()).toEqual([...launcherMakes].sort());
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

  it("refuses the demo merchants' public test API keys, takes a generated one", () => {
    for (const [name, value] of [
      ['ONCE_DEMO_API_KEY_TENANT_A', 'once_test_tenant_a'],
      ['ONCE_DEMO_API_KEY_TENANT_B', 'once_test_tenant_b'],
      ['ONCE_DEMO_API_KEY_TENANT_A', 'once_test_tenant_b'],
    ] as const) {
      expect(DEMO_API_KEY_VARIABLES).toContain(name);
      expect(() =>
        parseEnv({ PORT: text({ default: '1' }) }, { NODE_ENV: 'production', [name]: value }),
      ).toThrow(new RegExp(`^${name} is a demo value written in the repository`));
    }
    // What scripts/compose-secrets.sh writes: `once_live_` and 256 bits of hex.
    const generated = `once_live_${'0f'.repeat(32)}`;
    expect(
      parseEnv(
        { ONCE_DEMO_API_KEY_TENANT_A: text({ default: undefined }) },
        { NODE_ENV: 'production', ONCE_DEMO_API_KEY_TENANT_A: generated },
      ).ONCE_DEMO_API_KEY_TENANT_A,
    ).toBe(generated);
  });

  it('makes a new set every time, long enough and none known', () => {
    const [a, b] = [generateSecrets(), generateSecrets()];
    for (const name of Object.keys(a) as (keyof typeof a)[]) {
      expect(a[name]).not.toBe(b[name]);
      expect(a[name].length).toBeGreaterThanOrEqual(64);
      expect(KNOWN_DEMO_SECRETS).not.toContain(a[name]);
    }
  });
});
