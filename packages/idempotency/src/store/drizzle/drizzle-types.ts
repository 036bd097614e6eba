import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';

/**
 * Any drizzle Postgres database: postgres.js, node-postgres, or a transaction of either
 * (`PgTransaction` extends `PgDatabase`). `any` schema generics so every app schema fits.
 */
// biome-ignore lint/suspicious/noExplicitAny: drizzle's schema generics must accept any app schema.
export type AnyPgDatabase = PgDatabase<PgQueryResultHKT, any, any>;

/** The transaction type `db.transaction(cb)` hands to `cb` for a given database type. */
export type TransactionOf<TDb extends AnyPgDatabase> = Parameters<
  Parameters<TDb['transaction']>[0]
>[0];

/** Rows of a raw `execute()` result: postgres.js returns an array, node-postgres `{ rows }`. */
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  const rows = (result as { rows?: unknown }).rows;
  return Array.isArray(rows) ? (rows as T[]) : [];
}
