import {
  type CreateDatabaseClientOptions,
  openPostgresPool,
  openReplaceablePool,
  type PoolLog,
} from '@once/postgres';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import type postgres from 'postgres';
import * as schema from './schema/index.ts';

export type { CreateDatabaseClientOptions } from '@once/postgres';

export type Database = PostgresJsDatabase<typeof schema>;

export interface DatabaseClient {
  db: Database;
  sql: postgres.Sql;
  close(): Promise<void>;
}

/** The application database through Drizzle, on a pool from `openPostgresPool`. */
export function createDatabaseClient(
  url: string,
  options: CreateDatabaseClientOptions,
): DatabaseClient {
  const sql = openPostgresPool(url, options);
  const db = drizzle(sql, { schema });
  return { db, sql, close: () => sql.end({ timeout: 5 }) };
}

export interface ReplaceableDatabaseClient extends DatabaseClient {
  /** Swaps the pool for a fresh one; `db` and `sql` forward to it (see `openReplaceablePool`). */
  replace(reason: string): void;
}

/**
 * `createDatabaseClient` (same timeouts) behind a pool that can be replaced after the
 * postgres.js 3.4.9 null-socket crash; long-lived servers (web, worker) use this. `listenUrl`:
 * where LISTEN goes when `url` is a transaction pooler (see `openReplaceablePool`).
 */
export function createReplaceableDatabaseClient(
  url: string,
  options: CreateDatabaseClientOptions & { listenUrl?: string },
  log: PoolLog,
): ReplaceableDatabaseClient {
  const pool = openReplaceablePool(url, options, log);
  return {
    db: drizzle(pool.sql, { schema }),
    sql: pool.sql,
    replace: pool.replace,
    close: pool.close,
  };
}

/** Reads `DATABASE_URL`, failing with a message that says what to do. */
export function requireDatabaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  const url = env.DATABASE_URL;
  if (!url) {
    throw new Error(
      'DATABASE_URL is not set. Start the system with `npm run demo` (it starts an embedded ' +
        'PostgreSQL) or set DATABASE_URL to your own PostgreSQL.',
    );
  }
  return url;
}
