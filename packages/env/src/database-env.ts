/**
 * Where what needs a server session goes (migrations, which also set the role's timeouts, and
 * LISTEN): `<prefix>DATABASE_DIRECT_URL`, else the query URL. Behind a transaction pooler
 * without a direct URL the start is refused in one line naming the variable: a LISTEN there
 * hears nothing, and role settings changed through it miss the server session it keeps.
 *
 * @example
 * directDatabaseUrl({ url, poolMode: 'session', directUrl: undefined }, '', 'migrations'); // url
 */
export function directDatabaseUrl(
  database: { url: string; poolMode: 'session' | 'transaction'; directUrl: string | undefined },
  prefix: '' | 'PROCESSOR_',
  needs: string,
): string {
  if (database.directUrl) return database.directUrl;
  if (database.poolMode === 'session') return database.url;
  throw new Error(
    `${prefix}DATABASE_DIRECT_URL is not set: with ${prefix}DATABASE_POOL_MODE=transaction, ${needs} need a direct connection to PostgreSQL; set ${prefix}DATABASE_DIRECT_URL to PostgreSQL itself, not the pooler`,
  );
}
