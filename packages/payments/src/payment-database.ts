import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type postgres from 'postgres';

/**
 * Where a payment statement runs: a postgres.js pool or transaction (the worker, the
 * reconciler) or a drizzle database or transaction (the API, the webhook receiver). Run it
 * on the transaction that must commit with it.
 */
export type PaymentDatabase =
  | postgres.Sql
  | postgres.TransactionSql
  | { execute(query: SQL): PromiseLike<unknown> };

const dialect = new PgDialect();

/**
 * Runs one statement written with drizzle's `sql` on either driver, and returns its rows.
 * The statement text is the same on both: drizzle renders it, postgres.js binds the same
 * parameters.
 *
 * @example
 * const rows = await runPaymentStatement<{ id: string }>(tx, sql`select id from payments`);
 */
export async function runPaymentStatement<Row>(db: PaymentDatabase, query: SQL): Promise<Row[]> {
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
