import { existsSync } from 'node:fs';
import path from 'node:path';
import { migrationsFolder as sourceMigrationsFolder } from '@once/db';

/**
 * Where the drizzle migrations are when running inside Next: ONCE_MIGRATIONS_DIR if set,
 * else the first `drizzle/meta/_journal.json` found walking up from the working directory
 * (`next start` runs in apps/web; the folder is at the repo root), else @once/db's own
 * answer (right when not bundled, e.g. in tests).
 */
export function findMigrationsFolder(
  env: Record<string, string | undefined> = process.env,
  cwd: string = process.cwd(),
): string {
  // turbopackIgnore: a runtime lookup, not a file the bundle should trace.
  if (env.ONCE_MIGRATIONS_DIR)
    return path.resolve(/*turbopackIgnore: true*/ env.ONCE_MIGRATIONS_DIR);
  for (let dir = path.resolve(/*turbopackIgnore: true*/ cwd); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'drizzle');
    if (existsSync(path.join(candidate, 'meta', '_journal.json'))) return candidate;
    if (path.dirname(dir) === dir) return sourceMigrationsFolder;
  }
}
