import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { createDatabaseClient, type DatabaseClient } from '../client.ts';
import { runMigrations } from '../migrate.ts';

export interface TestDatabase {
  /** URL of the new, migrated database. */
  url: string;
  /** URL of the cluster's maintenance database (for pg_terminate_backend and the like). */
  adminUrl: string;
  client: DatabaseClient;
  drop(): Promise<void>;
}

/** The cluster the test run's global setup started (or DATABASE_URL's). */
export function testAdminUrl(): string {
  const url = process.env.ONCE_TEST_ADMIN_URL;
  if (!url) throw new Error('ONCE_TEST_ADMIN_URL is unset: run tests through vitest from the repo');
  return url;
}

/** A fresh database with every migration applied, dropped again by `drop()`. */
export async function createTestDatabase(label = 'test'): Promise<TestDatabase> {
  const adminUrl = testAdminUrl();
  const name = `${label.replace(/[^a-z0-9_]/g, '_')}_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = withDatabase(adminUrl, name);
  await runMigrations(url);
  const client = createDatabaseClient(url, { applicationName: `test-${label}` });
  return {
    url,
    adminUrl,
    client,
    async drop() {
      await client.close();
      const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await sql.unsafe(`drop database if exists ${name} with (force)`);
      await sql.end();
    },
  };
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
