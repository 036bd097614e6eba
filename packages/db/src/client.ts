import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { createReplaceableSql, type PoolLog } from './replaceable-pool.ts';
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

export interface ReplaceableDatabaseClient extends DatabaseClient {
  /** Swaps the pool for a fresh one; `db` and `sql` forward to it (see `createReplaceableSql`). */
  replace(reason: string): void;
}

/**
 * `createDatabaseClient` (same timeouts) behind a pool that can be replaced after the
 * postgres.js 3.4.9 null-socket crash; long-lived servers (web, worker) use this.
 *
 * @example
 * const client = createReplaceableDatabaseClient(url, { applicationName: 'once-web' }, log);
 * process.on('uncaughtException', (e) => isPostgresNullSocketWrite(e) && client.replace('bug'));
 */
export function createReplaceableDatabaseClient(
  url: string,
  options: CreateDatabaseClientOptions,
  log: PoolLog,
): ReplaceableDatabaseClient {
  const pool = createReplaceableSql(() => createDatabaseClient(url, options).sql, log);
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
