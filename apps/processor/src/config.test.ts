import { describe, expect, it } from 'vitest';
import { readProcessorConfig } from './config.ts';

const base = {
  PROCESSOR_DATABASE_URL: 'postgres://x@127.0.0.1/p',
  PROCESSOR_WEBHOOK_SECRET: 'whsec_test',
  PROCESSOR_ADMIN_TOKEN: 'test-admin',
};

describe('readProcessorConfig', () => {
  it('keeps keys 24 h and reaps every 10 min by default', () => {
    expect(readProcessorConfig(base)).toMatchObject({
      idempotencyRetentionMs: 86_400_000,
      idempotencyReapIntervalMs: 600_000,
      idempotencyLeaseMs: 30_000,
    });
  });

  it('refuses a retention that does not outlive the key lease, naming both variables', () => {
    expect(() =>
      readProcessorConfig({
        ...base,
        PROCESSOR_IDEMPOTENCY_RETENTION_MS: '1000',
        PROCESSOR_IDEMPOTENCY_LEASE_MS: '30000',
      }),
    ).toThrow(
      /PROCESSOR_IDEMPOTENCY_RETENTION_MS \(1000\) must be greater than PROCESSOR_IDEMPOTENCY_LEASE_MS/,
    );
  });

  it("reads its own database's pool mode and direct URL (PROCESSOR_), not the app's", () => {
    expect(readProcessorConfig({ ...base, DATABASE_POOL_MODE: 'transaction' })).toMatchObject({
      databasePoolMode: 'session',
      databaseDirectUrl: base.PROCESSOR_DATABASE_URL,
    });
    const direct = 'postgres://x@127.0.0.1:5432/p';
    expect(
      readProcessorConfig({
        ...base,
        PROCESSOR_DATABASE_POOL_MODE: 'transaction',
        PROCESSOR_DATABASE_DIRECT_URL: direct,
      }),
    ).toMatchObject({
      databaseUrl: base.PROCESSOR_DATABASE_URL,
      databasePoolMode: 'transaction',
      databaseDirectUrl: direct,
    });
  });

  it('refuses a number that is not one', () => {
    expect(() =>
      readProcessorConfig({ ...base, PROCESSOR_IDEMPOTENCY_REAP_INTERVAL_MS: 'soon' }),
    ).toThrow(/PROCESSOR_IDEMPOTENCY_REAP_INTERVAL_MS must be an integer/);
  });
});
