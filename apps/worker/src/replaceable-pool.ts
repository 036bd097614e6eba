import {
  type CreateDatabaseClientOptions,
  createReplaceableDatabaseClient,
  type ReplaceableDatabaseClient,
} from '@once/db';
import type { Log } from './logger.ts';

// The driver-bug detector lives with the shared pool in @once/db; re-exported for main.ts.
export { isPostgresNullSocketWrite } from '@once/db';

export type ReplaceablePool = ReplaceableDatabaseClient;

/**
 * The worker's application-database pool: @once/db's `createReplaceableDatabaseClient`
 * (swappable after the postgres.js 3.4.9 null-socket crash; see `createReplaceableSql`).
 *
 * @example
 * const pool = createReplaceablePool(url, { applicationName: 'once-worker' }, log);
 * await pool.sql`select 1`; pool.replace('driver bug'); await pool.sql`select 1`;
 */
export function createReplaceablePool(
  url: string,
  options: CreateDatabaseClientOptions,
  log: Log,
): ReplaceablePool {
  return createReplaceableDatabaseClient(url, options, log);
}
