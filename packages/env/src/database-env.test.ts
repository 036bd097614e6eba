import { describe, expect, it } from 'vitest';
import { databaseFields, databaseSettings } from './database-env.ts';
import { parseEnv } from './parse-env.ts';

const url = 'postgres://u@pooler:6432/once';
const directUrl = 'postgres://u@db:5432/once';
const app = databaseFields('', 'DATABASE_URL is not set');
const processor = databaseFields('PROCESSOR_', 'PROCESSOR_DATABASE_URL is not set');
const processorNeeds = "migrations and the webhook deliverer's LISTEN";

describe('databaseFields and databaseSettings', () => {
  it('reads the pool mode transaction or session (unset: session) and refuses anything else in one line naming the variable', () => {
    expect(databaseSettings(parseEnv(app, { DATABASE_URL: url }), '', 'migrations')).toEqual({
      databaseUrl: url,
      databasePoolMode: 'session',
      databaseDirectUrl: url,
    });
    expect(parseEnv(app, { DATABASE_URL: url, DATABASE_POOL_MODE: 'transaction' })).toMatchObject({
      DATABASE_POOL_MODE: 'transaction',
    });
    expect(() => parseEnv(app, { DATABASE_URL: url, DATABASE_POOL_MODE: 'statement' })).toThrow(
      /^DATABASE_POOL_MODE must be transaction .* got "statement"$/,
    );
    expect(() =>
      parseEnv(processor, {
        PROCESSOR_DATABASE_URL: url,
        PROCESSOR_DATABASE_POOL_MODE: 'Transaction',
      }),
    ).toThrow(/^PROCESSOR_DATABASE_POOL_MODE must be transaction .* got "Transaction"$/);
    expect(() => parseEnv(processor, {})).toThrow(/^PROCESSOR_DATABASE_URL is not set$/);
  });

  it('is the direct URL when set, else the query URL unless that is a transaction pooler', () => {
    const pooled = { PROCESSOR_DATABASE_URL: url, PROCESSOR_DATABASE_POOL_MODE: 'transaction' };
    expect(
      databaseSettings(
        parseEnv(processor, { ...pooled, PROCESSOR_DATABASE_DIRECT_URL: directUrl }),
        'PROCESSOR_',
        processorNeeds,
      ),
    ).toEqual({ databaseUrl: url, databasePoolMode: 'transaction', databaseDirectUrl: directUrl });
    expect(
      databaseSettings(
        parseEnv(app, { DATABASE_URL: url, DATABASE_DIRECT_URL: directUrl }),
        '',
        'migrations',
      ).databaseDirectUrl,
    ).toBe(directUrl);
    expect(() =>
      databaseSettings(
        parseEnv(processor, { ...pooled, PROCESSOR_DATABASE_DIRECT_URL: '' }),
        'PROCESSOR_',
        processorNeeds,
      ),
    ).toThrow(
      "PROCESSOR_DATABASE_DIRECT_URL is not set: with PROCESSOR_DATABASE_POOL_MODE=transaction, migrations and the webhook deliverer's LISTEN need a direct connection to PostgreSQL; set PROCESSOR_DATABASE_DIRECT_URL to PostgreSQL itself, not the pooler",
    );
  });
});
