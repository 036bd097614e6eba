import { createReplaceableSql, type PoolLog } from '@once/db/replaceable-pool';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from './schema/index.ts';

export type ProcessorDatabase = PostgresJsDatabase<typeof schema>;
/** A transaction handle; every money movement happens inside one. */
export type ProcessorTransaction = Parameters<Parameters<ProcessorDatabase['transaction']>[0]>[0];

export interface ProcessorDatabaseClient {
  db: ProcessorDatabase;
  sql: postgres.Sql;
  /**
   * Swaps in a fresh pool (after the postgres.js null-socket crash, see `createReplaceableSql`);
   * `db` and `sql` keep working, they forward to the new one.
   */
  replace(reason: string): void;
  close(): Promise<void>;
}

/**
 * Connects to the processor's own database. Timeouts on every connection: a stuck lock
 * or a dead peer fails a request instead of hanging it.
 *
 * @example
 * const { db, close } = createProcessorDatabase(process.env.PROCESSOR_DATABASE_URL!);
 */
export function createProcessorDatabase(
  url: string,
  max = 10,
  log: PoolLog = () => {},
): ProcessorDatabaseClient {
  const open = () =>
    postgres(url, {
      max,
      onnotice: () => {},
      connect_timeout: 10,
      idle_timeout: 60,
      connection: {
        application_name: 'once-processor',
        statement_timeout: 15_000,
        lock_timeout: 5_000,
        idle_in_transaction_session_timeout: 30_000,
      },
    });
  const pool = createReplaceableSql(open, log);
  const db = drizzle(pool.sql, { schema });
  return { db, sql: pool.sql, replace: pool.replace, close: pool.close };
}
