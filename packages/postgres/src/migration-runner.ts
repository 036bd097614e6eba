import path from 'node:path';
import { readMigrationFiles } from 'drizzle-orm/migrator';
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

/** Where drizzle-kit's migrator records applied migrations (the same table, so both agree). */
const JOURNAL_SCHEMA = 'drizzle';
const JOURNAL_TABLE = '__drizzle_migrations';

/**
 * Applies a folder's pending Drizzle migrations in ONE transaction holding a transaction-scoped
 * advisory lock, so processes starting together wait instead of racing, and it works through
 * a transaction-pooling proxy. Bookkeeping is drizzle-kit's own, so either migrator continues
 * the other's work; a statement that cannot run in a transaction does not belong here.
 */
export async function applyMigrations(url: string, target: MigrationTarget): Promise<void> {
  const migrations = readMigrationFiles({
    migrationsFolder: path.resolve(/*turbopackIgnore: true*/ target.folder),
  });
  const sql = postgres(url, {
    max: 1,
    onnotice: () => {},
    connection: { application_name: target.applicationName },
  });
  try {
    await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${target.lockId})`;
      await tx`create schema if not exists ${tx(JOURNAL_SCHEMA)}`;
      await tx`
        create table if not exists ${tx(JOURNAL_SCHEMA)}.${tx(JOURNAL_TABLE)} (
          id serial primary key,
          hash text not null,
          created_at bigint
        )`;
      const [last] = await tx<{ created_at: string | null }[]>`
        select created_at from ${tx(JOURNAL_SCHEMA)}.${tx(JOURNAL_TABLE)}
        order by created_at desc limit 1`;
      const appliedUpTo = last?.created_at == null ? undefined : Number(last.created_at);
      for (const migration of migrations) {
        if (appliedUpTo !== undefined && migration.folderMillis <= appliedUpTo) continue;
        for (const statement of migration.sql) {
          if (statement.trim() !== '') await tx.unsafe(statement);
        }
        await tx`
          insert into ${tx(JOURNAL_SCHEMA)}.${tx(JOURNAL_TABLE)} (hash, created_at)
          values (${migration.hash}, ${migration.folderMillis})`;
      }
    });
  } finally {
    await sql.end({ timeout: 5 });
  }
}
