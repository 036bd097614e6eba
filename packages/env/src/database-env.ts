import { poolMode, required, text } from './env-fields.ts';
import type { ParsedEnv } from './parse-env.ts';

/** The web's and the worker's variables have none; the processor's own database `PROCESSOR_`. */
type Prefix = '' | 'PROCESSOR_';

type DatabaseFields<P extends Prefix> = Record<`${P}DATABASE_URL`, ReturnType<typeof required>> &
  Record<`${P}DATABASE_POOL_MODE`, ReturnType<typeof poolMode>> &
  Record<`${P}DATABASE_DIRECT_URL`, ReturnType<typeof text<undefined>>>;

/**
 * A database's variables as fields of an app's `parseEnv` shape: `<prefix>DATABASE_URL`
 * (unset: refused with `unset`), `<prefix>DATABASE_POOL_MODE` (`session` or `transaction`)
 * and `<prefix>DATABASE_DIRECT_URL`. `databaseSettings` reads them once parsed.
 */
export function databaseFields<P extends Prefix>(prefix: P, unset: string): DatabaseFields<P> {
  return {
    [`${prefix}DATABASE_URL`]: required(unset),
    [`${prefix}DATABASE_POOL_MODE`]: poolMode(),
    [`${prefix}DATABASE_DIRECT_URL`]: text({ default: undefined }),
  } as DatabaseFields<P>;
}

/**
 * The query URL, its pool mode, and where what needs a server session goes (`needs`:
 * migrations, which also set the role's timeouts, and LISTEN): the direct URL, else the query
 * URL. Behind a transaction pooler without a direct URL the start is refused in one line naming
 * the variable: a LISTEN there hears nothing, and role settings changed through it miss the
 * server session it keeps.
 *
 * @example
 * const e = parseEnv(databaseFields('', 'DATABASE_URL is not set'), { DATABASE_URL: url });
 * databaseSettings(e, '', 'migrations'); // { databaseUrl: url, databasePoolMode: 'session', databaseDirectUrl: url }
 */
export function databaseSettings<P extends Prefix>(
  e: ParsedEnv<DatabaseFields<P>>,
  prefix: P,
  needs: string,
): { databaseUrl: string; databasePoolMode: 'session' | 'transaction'; databaseDirectUrl: string } {
  const databaseUrl = e[`${prefix}DATABASE_URL`];
  const databasePoolMode = e[`${prefix}DATABASE_POOL_MODE`];
  const directUrl = e[`${prefix}DATABASE_DIRECT_URL`];
  if (!directUrl && databasePoolMode === 'transaction') {
    throw new Error(
      `${prefix}DATABASE_DIRECT_URL is not set: with ${prefix}DATABASE_POOL_MODE=transaction, ${needs} need a direct connection to PostgreSQL; set ${prefix}DATABASE_DIRECT_URL to PostgreSQL itself, not the pooler`,
    );
  }
  return { databaseUrl, databasePoolMode, databaseDirectUrl: directUrl || databaseUrl };
}
