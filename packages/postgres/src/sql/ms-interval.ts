import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';

/**
 * A duration in milliseconds as an SQL `interval`, for `now() + ...`: every time a statement
 * writes (leases, retries, next checks, webhook deliveries) is computed by the database clock,
 * so processes with skewed clocks agree. `ms` is a number or a `sql.placeholder`. The
 * published `@once/idempotency` keeps its own copy: it depends on no private package.
 *
 * @example
 * sql`update outbox_jobs set locked_until = now() + ${msInterval(30_000)} where id = ${id}`
 */
export function msInterval(ms: number | SQLWrapper): SQL {
  return sql`(${ms}::float8 * interval '1 millisecond')`;
}
