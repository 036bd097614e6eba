import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';

/** `value` milliseconds as a Postgres interval; `value` is a number or a `sql.placeholder`. */
export function msInterval(value: number | SQLWrapper): SQL {
  return sql`(${value}::float8 * interval '1 millisecond')`;
}
