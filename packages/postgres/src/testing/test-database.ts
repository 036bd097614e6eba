import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

export interface EmptyTestDatabase {
  /** URL of the new, empty database. */
  url: string;
  /** URL of the cluster's maintenance database (for pg_terminate_backend and the like). */
  adminUrl: string;
  drop(): Promise<void>;
}

/** The cluster the test run's global setup started (`ONCE_TEST_ADMIN_URL`). */
export function testAdminUrl(): string {
  const url = process.env.ONCE_TEST_ADMIN_URL;
  if (!url) throw new Error('ONCE_TEST_ADMIN_URL is unset: run tests through vitest from the repo');
  return url;
}

/** A fresh database `<label>_<random>` on the test run's cluster: empty, or a copy of `template`. */
export async function createEmptyTestDatabase(
  label = 'test',
  options: { template?: string } = {},
): Promise<EmptyTestDatabase> {
  const adminUrl = testAdminUrl();
  const name = `${label.replace(/[^a-z0-9_]/g, '_')}_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(
      options.template
        ? `create database ${name} template ${options.template}`
        : `create database ${name}`,
    );
  } finally {
    await admin.end();
  }
  return {
    url: withDatabase(adminUrl, name),
    adminUrl,
    async drop() {
      const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await sql.unsafe(`drop database if exists ${name} with (force)`);
      await sql.end();
    },
  };
}

/**
 * Builds the template database `name` unless it exists, under another name renamed when
 * complete (never copied half-built), callers in other processes waiting on an advisory
 * lock. Name it after what `build` applies, so a changed schema gets a new template.
 */
export async function ensureTemplateDatabase(
  name: string,
  build: (url: string) => Promise<void>,
): Promise<void> {
  const adminUrl = testAdminUrl();
  // One connection: the session-level lock is held until `end()` closes it.
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin`select pg_advisory_lock(hashtext(${name}))`;
    const [exists] = await admin`select 1 from pg_database where datname = ${name}`;
    if (exists) return;
    const building = `${name}_building`;
    await admin.unsafe(`drop database if exists ${building} with (force)`);
    await admin.unsafe(`create database ${building}`);
    await build(withDatabase(adminUrl, building));
    await admin.unsafe(`alter database ${building} rename to ${name}`);
  } finally {
    await admin.end();
  }
}

/** `url` with its database replaced by `database`. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
