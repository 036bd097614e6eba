import { type SQL, sql } from 'drizzle-orm';

/**
 * Our own constants (states, kinds) as the SQL literal list `('a', 'b')`, for `x in <list>`.
 * Literals, not bind parameters: the planner matches a partial index only against a
 * predicate it can see, and a CHECK constraint or index is defined with literals. Only
 * `[a-z_]` names pass, so nothing unquoted ever reaches SQL.
 *
 * @example
 * sql`select id from payments where status in ${sqlLiteralList(['processing', 'unknown'])}`
 */
export function sqlLiteralList(values: readonly string[]): SQL {
  if (values.length === 0) throw new Error('an SQL literal list needs at least one value');
  for (const value of values) {
    if (!/^[a-z_]+$/.test(value)) throw new Error(`not a literal-safe name: ${value}`);
  }
  return sql.raw(`(${values.map((value) => `'${value}'`).join(', ')})`);
}
