import { randomBytes } from 'node:crypto';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { idempotencySchemaSql } from '../store/drizzle/schema-sql.ts';

/** A throw-away database with the idempotency tables, for this package's own tests. */
export interface IdempotencyTestDatabase {
  url: string;
  adminUrl: string;
  sql: postgres.Sql;
  db: PostgresJsDatabase;
  drop(): Promise<void>;
}

export function testAdminUrl(): string {
  const url = process.env.ONCE_TEST_ADMIN_URL;
  if (!url)
    throw new Error('ONCE_TEST_ADMIN_URL is unset: run tests through vitest from the repo root');
  return url;
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Create a database named after the test file, apply `idempotencySchemaSql`, connect with `max` connections. */
export async function createIdempotencyTestDatabase(
  label: string,
  max = 10,
): Promise<IdempotencyTestDatabase> {
  const adminUrl = testAdminUrl();
  const name = `idem_${label.replace(/[^a-z0-9_]/g, '_')}_${randomBytes(5).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = withDatabase(adminUrl, name);
  const sql = postgres(url, { max, onnotice: () => {} });
  await sql.unsafe(idempotencySchemaSql);
  return {
    url,
    adminUrl,
    sql,
    db: drizzle(sql),
    async drop() {
      await sql.end({ timeout: 1 });
      const cleanup = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await cleanup.unsafe(`drop database if exists ${name} with (force)`);
      await cleanup.end();
    },
  };
}
