import { describe, expect, it } from 'vitest';
import { directDatabaseUrl } from './direct-database-url.ts';
import { poolMode } from './env-fields.ts';
import { parseEnv } from './parse-env.ts';

const url = 'postgres://u@pooler:6432/once';
const directUrl = 'postgres://u@db:5432/once';

describe('poolMode and directDatabaseUrl', () => {
  it('reads transaction or session (unset: session) and refuses anything else by name', () => {
    const shape = { DATABASE_POOL_MODE: poolMode() };
    expect(parseEnv(shape, {}).DATABASE_POOL_MODE).toBe('session');
    expect(parseEnv(shape, { DATABASE_POOL_MODE: 'transaction' }).DATABASE_POOL_MODE).toBe(
      'transaction',
    );
    expect(() => parseEnv(shape, { DATABASE_POOL_MODE: 'statement' })).toThrow(
      /^DATABASE_POOL_MODE must be transaction .* got "statement"$/,
    );
  });

  it('is the direct URL when set, else the query URL unless that is a transaction pooler', () => {
    expect(directDatabaseUrl({ url, poolMode: 'transaction', directUrl }, '', 'migrations')).toBe(
      directUrl,
    );
    expect(
      directDatabaseUrl({ url, poolMode: 'session', directUrl: undefined }, '', 'migrations'),
    ).toBe(url);
    expect(() =>
      directDatabaseUrl(
        { url, poolMode: 'transaction', directUrl: undefined },
        'PROCESSOR_',
        "migrations and the webhook deliverer's LISTEN",
      ),
    ).toThrow(
      "PROCESSOR_DATABASE_DIRECT_URL is not set: with PROCESSOR_DATABASE_POOL_MODE=transaction, migrations and the webhook deliverer's LISTEN need a direct connection to PostgreSQL; set PROCESSOR_DATABASE_DIRECT_URL to PostgreSQL itself, not the pooler",
    );
  });
});
