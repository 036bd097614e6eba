import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const processorDir = fileURLToPath(new URL('..', import.meta.url));

/** Starts the processor with `env` on top of this process's and the test secrets. */
async function startWith(env: Record<string, string | undefined>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: processorDir,
    env: {
      ...process.env,
      PROCESSOR_DATABASE_URL: 'postgres://postgres@127.0.0.1:9/none',
      PROCESSOR_WEBHOOK_SECRET: 'whsec_test',
      PROCESSOR_ADMIN_TOKEN: 'test-admin',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, lines: output.trim().split('\n') };
}

describe('processor start-up with a secret missing', () => {
  it('refuses to start without PROCESSOR_WEBHOOK_SECRET (no built-in demo secret), exit 1', async () => {
    const { code, lines } = await startWith({ PROCESSOR_WEBHOOK_SECRET: '' });
    expect(code).toBe(1);
    expect(lines).toEqual([
      "processor: cannot start: PROCESSOR_WEBHOOK_SECRET is not set: set the secret webhooks are signed with (the same value as the web app's; `npm run demo` sets one).",
    ]);
  }, 60_000);

  it('refuses to start without PROCESSOR_ADMIN_TOKEN, exit 1', async () => {
    const { code, lines } = await startWith({ PROCESSOR_ADMIN_TOKEN: '' });
    expect(code).toBe(1);
    expect(lines).toEqual([
      'processor: cannot start: PROCESSOR_ADMIN_TOKEN is not set: set the token the admin API requires (`npm run demo` sets one).',
    ]);
  }, 60_000);
});

describe('processor start-up with windows that do not fit', () => {
  it('refuses a key retention shorter than the key lease in one line, exit 1', async () => {
    const { code, lines } = await startWith({
      PROCESSOR_IDEMPOTENCY_RETENTION_MS: '1000',
      PROCESSOR_IDEMPOTENCY_LEASE_MS: '30000',
    });
    expect(code).toBe(1);
    expect(lines).toEqual([
      'processor: cannot start: PROCESSOR_IDEMPOTENCY_RETENTION_MS (1000) must be greater than PROCESSOR_IDEMPOTENCY_LEASE_MS (30000): a key must outlive the request that holds it.',
    ]);
  }, 60_000);
});

describe('processor start-up with its database behind a pooler', () => {
  it('refuses an unknown pool mode, and transaction mode without the direct URL, in one line, exit 1', async () => {
    const unknown = await startWith({ PROCESSOR_DATABASE_POOL_MODE: 'statement' });
    expect(unknown.code).toBe(1);
    expect(unknown.lines).toEqual([
      'processor: cannot start: PROCESSOR_DATABASE_POOL_MODE must be transaction (the URL is a transaction-mode pooler such as PgBouncer) or session, got "statement"',
    ]);
    const noDirect = await startWith({ PROCESSOR_DATABASE_POOL_MODE: 'transaction' });
    expect(noDirect.code).toBe(1);
    expect(noDirect.lines).toEqual([
      "processor: cannot start: PROCESSOR_DATABASE_DIRECT_URL is not set: with PROCESSOR_DATABASE_POOL_MODE=transaction, migrations and the webhook deliverer's LISTEN need a direct connection to PostgreSQL; set PROCESSOR_DATABASE_DIRECT_URL to PostgreSQL itself, not the pooler",
    ]);
  }, 60_000);
});
