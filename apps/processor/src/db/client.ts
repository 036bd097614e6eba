import { openReplaceablePool, type PoolLog, type PoolMode } from '@once/postgres';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import * as schema from './schema/index.ts';

export type ProcessorDatabase = PostgresJsDatabase<typeof schema>;
/** A transaction handle; every money movement happens inside one. */
export type ProcessorTransaction = Parameters<Parameters<ProcessorDatabase['transaction']>[0]>[0];

/**
 * The processor's own database, on pools whose timeouts fail a stuck request instead of
 * hanging it; `listenUrl` when `url` is a transaction pooler. `replace` swaps in a fresh pool
 * (after the postgres.js null-socket crash); `db` and `sql` forward to the new one (see
 * `openReplaceablePool`).
 */
export function createProcessorDatabase(
  url: string,
  log: PoolLog,
  pooler: { poolMode?: PoolMode; listenUrl?: string } = {},
) {
  const pool = openReplaceablePool(url, { applicationName: 'once-processor', ...pooler }, log);
  const db = drizzle(pool.sql, { schema });
  return { db, sql: pool.sql, replace: pool.replace, close: pool.close };
}
