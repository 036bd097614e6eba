import { generateSecrets, KNOWN_DEMO_SECRETS } from '@once/env';
import { startWebRuntime } from '@once/web/testing';
import { describe, expect, it, vi } from 'vitest';
import { runEntry } from './support/run-entry.ts';

/**
 * A production start (NODE_ENV=production, as the image and the launcher set it) of each app
 * that holds a secret refuses a value written in the repository, or a short one, in ONE line
 * saying what to do, before it listens or touches a database (nothing listens at the URLs).
 */
const APPS = {
  migrate: 'packages/db/src/migrate-cli.ts',
  web: 'apps/web/src/process/main.ts',
  processor: 'apps/processor/src/main.ts',
  worker: 'apps/worker/src/runtime/main.ts',
} as const;

/** What every app needs to get as far as its environment check: nothing answers there. */
const BASE_ENV = {
  NODE_ENV: 'production',
  HOST: '127.0.0.1',
  PORT: '0',
  WORKER_HEALTH_PORT: '0',
  DATABASE_URL: 'postgres://once:password@127.0.0.1:9/once',
  PROCESSOR_DATABASE_URL: 'postgres://once:password@127.0.0.1:9/once_processor',
  PROCESSOR_URL: 'http://127.0.0.1:9',
};

async function start(app: keyof typeof APPS, env: Record<string, string>, args: string[] = []) {
  const { code, output } = await runEntry(APPS[app], { ...BASE_ENV, ...env }, { args });
  return { code, lines: output.trim().split('\n') };
}

describe('a production start refuses secrets written in the repository', () => {
  it.each([
    ['web', 'SESSION_SECRET', 'once-demo-session-secret'],
    ['processor', 'PROCESSOR_WEBHOOK_SECRET', 'whsec_once_demo'],
    ['processor', 'PROCESSOR_ADMIN_TOKEN', 'once-admin'],
    ['worker', 'PROCESSOR_ADMIN_TOKEN', 'once-admin'],
    ['web', 'ONCE_DEMO_API_KEY_TENANT_A', 'once_test_tenant_a'],
    ['web', 'ONCE_DEMO_API_KEY_TENANT_B', 'once_test_tenant_b'],
  ] as const)(
    '%s with %s=<the old demo value>: exit 1, one line',
    async (app, name, value) => {
      expect(KNOWN_DEMO_SECRETS).toContain(value);
      const { code, lines } = await start(app, { ...generateSecrets(), [name]: value });
      expect(code).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^${app}: [a-z -]+: ${name} is a demo value written in the repository, refused with NODE_ENV=production: generate one with \`openssl rand -hex 32\``,
        ),
      );
      expect(lines[0]).not.toContain(value);
    },
    60_000,
  );

  it.each(['web', 'worker'] as const)(
    '%s without ONCE_ANSWER_KEY: exit 1, one line (stored answers are encrypted in production)',
    async (app) => {
      const { ONCE_ANSWER_KEY: _, ...secrets } = generateSecrets();
      const { code, lines } = await start(app, secrets);
      expect(code).toBe(1);
      expect(lines).toEqual([
        expect.stringMatching(
          new RegExp(`^${app}: [a-z -]+: ONCE_ANSWER_KEY is not set: .*\`openssl rand -hex 32\`$`),
        ),
      ]);
    },
    60_000,
  );

  it('refuses a short secret, and names how long it must be', async () => {
    const { code, lines } = await start('web', {
      ...generateSecrets(),
      SESSION_SECRET: 'sixteen-chars-ok',
    });
    expect(code).toBe(1);
    expect(lines).toEqual([
      expect.stringMatching(
        /^web: cannot start: SESSION_SECRET is 16 characters, too short for NODE_ENV=production \(at least 32\)/,
      ),
    ]);
  }, 60_000);
});

/**
 * The demo merchants' API keys also sign a browser in as their operator. Unset, the seed
 * would use the public test keys (`once_test_tenant_a`, ...): only `npm run demo` on loopback
 * and the tests may. A production seed anywhere else is refused before it writes anything.
 */
describe("a production seed refuses the demo merchants' public test API keys", () => {
  const PUBLIC_KEYS =
    /^ONCE_DEMO_API_KEY_TENANT_A is unset or a public test key: the demo merchant tenant_a would open with an API key written in the repository, refused with NODE_ENV=production: set ONCE_DEMO_API_KEY_TENANT_A and ONCE_DEMO_API_KEY_TENANT_B \(`sh scripts\/compose-secrets\.sh` writes both to \.env\), or /;
  const ownKeys = () => ({
    ONCE_DEMO_API_KEY_TENANT_A: `once_live_${generateSecrets().SESSION_SECRET}`,
    ONCE_DEMO_API_KEY_TENANT_B: `once_live_${generateSecrets().SESSION_SECRET}`,
  });

  it.each([
    ['unset', {}],
    ['the public test keys, given', { ONCE_DEMO_API_KEY_TENANT_A: 'once_test_tenant_a' }],
  ] as const)(
    'migrate --seed-demo, keys %s: exit 1, one line, before the database',
    async (_, keys) => {
      const { code, lines } = await start('migrate', keys, ['--seed-demo']);
      expect(code).toBe(1);
      expect(lines).toEqual([
        expect.stringMatching(
          /^migrate: ONCE_DEMO_API_KEY_TENANT_A is unset or a public test key: .*, or run migrate without --seed-demo$/,
        ),
      ]);
      expect(lines[0]!.slice('migrate: '.length)).toMatch(PUBLIC_KEYS);
    },
    60_000,
  );

  it('migrate --seed-demo with keys of its own gets past the check (to the database)', async () => {
    const { code, lines } = await start('migrate', ownKeys(), ['--seed-demo']);
    expect(code).toBe(1);
    expect(lines.join('\n')).not.toMatch(/ONCE_DEMO_API_KEY/);
  }, 60_000);

  it('the web runtime: refused beyond loopback or behind a proxy; `npm run demo` on loopback keeps them', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const env = (extra: Record<string, string>) => ({
      ...BASE_ENV,
      ...generateSecrets(),
      // Nothing listens there: past the check, the start fails on the database instead.
      DATABASE_URL: 'postgres://once:password@127.0.0.1:9/once',
      ...extra,
    });
    try {
      await expect(startWebRuntime(env({ HOST: '0.0.0.0' }))).rejects.toThrow(PUBLIC_KEYS);
      await expect(
        startWebRuntime(
          env({
            HOST: '0.0.0.0',
            ONCE_DEMO_API_KEY_TENANT_A: ownKeys().ONCE_DEMO_API_KEY_TENANT_A,
          }),
        ),
      ).rejects.toThrow(/^ONCE_DEMO_API_KEY_TENANT_B is unset/);
      await expect(
        startWebRuntime(env({ HOST: '127.0.0.1', ONCE_TRUST_PROXY: '1' })),
      ).rejects.toThrow(PUBLIC_KEYS);
      // The refusal is printed once, as one line, for the operator reading the logs.
      expect(errors.mock.calls).toEqual([
        [expect.stringMatching(/^web: cannot start: ONCE_DEMO_API_KEY_TENANT_A is unset/)],
      ]);
      // Not refused: the demo on loopback, a deployment with its own keys, no demo merchants.
      const allowedStarts: Record<string, string>[] = [
        { HOST: '127.0.0.1' },
        { HOST: '0.0.0.0', ...ownKeys() },
        { HOST: '0.0.0.0', ONCE_SEED_DEMO: '0' },
      ];
      for (const allowed of allowedStarts) {
        const failure = await startWebRuntime(env(allowed)).then(
          () => new Error('started without a database'),
          (error: unknown) => error as Error,
        );
        expect(failure.message, JSON.stringify(allowed)).not.toMatch(
          /ONCE_DEMO_API_KEY|ONCE_SEED_DEMO/,
        );
      }
    } finally {
      errors.mockRestore();
    }
  }, 60_000);
});
