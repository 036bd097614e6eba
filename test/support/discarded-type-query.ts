/**
 * postgres.js runs an array-type query first on every new connection and discards its promise
 * (porsager/postgres#1192): when a test kills that connection, its rejection reaches no one.
 * vitest.config.ts lets only this query through: any other unhandled rejection still fails.
 */
export function isDiscardedTypeQuery(error: unknown): boolean {
  const query = (error as { query?: unknown } | null)?.query;
  return typeof query === 'string' && /pg_catalog\.pg_type\b[\s\S]*typcategory = 'A'/.test(query);
}
