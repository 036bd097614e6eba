import path from 'node:path';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';

export interface MigrationTarget {
  /** A drizzle-kit output folder (SQL files and `meta/_journal.json`). */
  folder: string;
  /**
   * Advisory lock key: the same in every process that migrates this database, and different
   * per schema, so two schemas on one cluster never wait for each other.
   */
  lockId: number;
  /** Shown in pg_stat_activity while the migrations run. */
  applicationName: string;
}

/**
 * Applies a folder's pending Drizzle migrations under a session-level advisory lock, so
 * processes that start together wait for each other instead of racing to apply the same
 * migration twice. Closing the session releases the lock, even when a migration failed.
 *
 * @example
 * await applyMigrations(url, { folder: '/srv/app/drizzle', lockId: 0x0ce001, applicationName: 'app-migrate' });
 */
export async function applyMigrations(url: string, target: MigrationTarget): Promise<void> {
  const sql = postgres(url, {
    max: 1,
    onnotice: () => {},
    connection: { application_name: target.applicationName },
  });
  try {
    await sql`select pg_advisory_lock(${target.lockId})`;
    await migrate(drizzle(sql), {
      migrationsFolder: path.resolve(/*turbopackIgnore: true*/ target.folder),
    });
  } finally {
    await sql.end({ timeout: 5 });
  }
}
