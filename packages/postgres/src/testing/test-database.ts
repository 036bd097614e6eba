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

/**
 * A fresh, empty database named `<label>_<random>` on the test run's cluster, dropped (with
 * its connections) by `drop()`. Callers apply their own schema.
 *
 * @example
 * const database = await createEmptyTestDatabase('faults');
 * await applyMigrations(database.url, target);
 * await database.drop();
 */
export async function createEmptyTestDatabase(label = 'test'): Promise<EmptyTestDatabase> {
  const adminUrl = testAdminUrl();
  const name = `${label.replace(/[^a-z0-9_]/g, '_')}_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
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

/** `url` with its database replaced by `database`. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
