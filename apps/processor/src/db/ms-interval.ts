import { type SQL, sql } from 'drizzle-orm';

/**
 * A duration in milliseconds as an SQL `interval`, for `now() + ...` in the processor's
 * drizzle statements: times are computed by the database clock, from one spelling.
 *
 * @example
 * sql`update webhook_events set next_attempt_at = now() + ${msInterval(1_000)}`
 */
export function msInterval(ms: number): SQL {
  return sql`(${ms}::float8 * interval '1 millisecond')`;
}
