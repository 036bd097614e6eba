import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from './schema/index.ts';

export type Database = PostgresJsDatabase<typeof schema>;

export interface CreateDatabaseClientOptions {
  /** Shown in pg_stat_activity, so an operator can tell web, worker and tests apart. */
  applicationName: string;
  /** Pool size. */
  max?: number;
  /** Per-statement limit; a hung query must not hold a request forever. */
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  /** A transaction left open by a stalled process is ended by the server. */
  idleInTransactionTimeoutMs?: number;
}

export interface DatabaseClient {
  db: Database;
  sql: postgres.Sql;
  close(): Promise<void>;
}

/**
 * The one way processes connect to the application database: postgres.js with timeouts
 * on every connection, so a dead peer or a stuck lock fails fast instead of hanging.
 */
export function createDatabaseClient(
  url: string,
  options: CreateDatabaseClientOptions,
): DatabaseClient {
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connect_timeout: 10,
    idle_timeout: 60,
    connection: {
      application_name: options.applicationName,
      statement_timeout: options.statementTimeoutMs ?? 15_000,
      lock_timeout: options.lockTimeoutMs ?? 5_000,
      idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? 30_000,
    },
  });
  const db = drizzle(sql, { schema });
  return { db, sql, close: () => sql.end({ timeout: 5 }) };
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
