/**
 * postgres.js 3.4.9 runs an array-type query (`from pg_catalog.pg_type`, `typcategory = 'A'`)
 * first on every new connection and discards its promise (porsager/postgres#1192): when a
 * test kills that connection (a failover, a restart, a pool replaced) its rejection reaches
 * no one, and Vitest would fail the run with no failed test. The apps survive it with the
 * broader `isDiscardedDriverConnectionError`; vitest.config.ts lets only this query
 * through: our own code never reads pg_type, and any other unhandled rejection still fails.
 */
export function isDiscardedTypeQuery(error: unknown): boolean {
  const query = (error as { query?: unknown } | null)?.query;
  return typeof query === 'string' && /pg_catalog\.pg_type\b[\s\S]*typcategory = 'A'/.test(query);
}
