import type postgres from 'postgres';

/**
 * A duration in milliseconds as an SQL `interval` fragment, for `now() + ...` in the
 * worker's postgres.js statements: every time the worker writes (leases, retries, next
 * checks) is computed by the database clock, from one spelling.
 *
 * @example
 * await sql`update outbox_jobs set locked_until = now() + ${msInterval(sql, 30_000)} where id = ${id}`;
 */
export function msInterval(sql: postgres.Sql | postgres.TransactionSql, ms: number) {
  return sql`(${ms}::float8 * interval '1 millisecond')`;
}
