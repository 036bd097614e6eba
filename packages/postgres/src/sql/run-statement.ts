import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type postgres from 'postgres';

/**
 * Where a statement runs: a postgres.js pool or transaction (the worker) or a drizzle
 * database or transaction (the web app, the API). Run it on the transaction that must
 * commit with it.
 */
export type SqlRunner =
  | postgres.Sql
  | postgres.TransactionSql
  | { execute(query: SQL): PromiseLike<unknown> };

const dialect = new PgDialect();

/**
 * Runs one statement written with drizzle's `sql` on either driver and returns its rows: the
 * text is the same on both, drizzle renders it and postgres.js binds the same parameters.
 * Bind JSON as text and cast it (`${json}::text::jsonb`): postgres.js would encode a string
 * bound to a jsonb parameter a second time.
 *
 * @example
 * const rows = await runStatement<{ id: string }>(tx, sql`select id from outbox_jobs`);
 */
export async function runStatement<Row>(db: SqlRunner, query: SQL): Promise<Row[]> {
  if (typeof db === 'function') {
    const rendered = dialect.sqlToQuery(query);
    const rows = await db.unsafe(
      rendered.sql,
      rendered.params as postgres.ParameterOrJSON<never>[],
    );
    return Array.from(rows as unknown as Iterable<Row>);
  }
  return Array.from((await db.execute(query)) as Iterable<Row>);
}
