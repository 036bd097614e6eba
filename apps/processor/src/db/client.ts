import { openReplaceablePool, type PoolLog, type PoolMode } from '@once/postgres';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import type postgres from 'postgres';
import * as schema from './schema/index.ts';

export type ProcessorDatabase = PostgresJsDatabase<typeof schema>;
/** A transaction handle; every money movement happens inside one. */
export type ProcessorTransaction = Parameters<Parameters<ProcessorDatabase['transaction']>[0]>[0];

export interface ProcessorDatabaseClient {
  db: ProcessorDatabase;
  sql: postgres.Sql;
  /**
   * Swaps in a fresh pool (after the postgres.js null-socket crash, see `openReplaceablePool`);
   * `db` and `sql` keep working, they forward to the new one.
   */
  replace(reason: string): void;
  close(): Promise<void>;
}

/**
 * The processor's own database, on pools whose timeouts fail a stuck request instead of
 * hanging it; `listenUrl` when `url` is a transaction pooler (see `openReplaceablePool`).
 */
export function createProcessorDatabase(
  url: string,
  log: PoolLog,
  pooler: { poolMode?: PoolMode; listenUrl?: string } = {},
): ProcessorDatabaseClient {
  const pool = openReplaceablePool(url, { applicationName: 'once-processor', ...pooler }, log);
  const db = drizzle(pool.sql, { schema });
  return { db, sql: pool.sql, replace: pool.replace, close: pool.close };
}
