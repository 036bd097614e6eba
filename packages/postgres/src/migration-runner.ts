import path from 'node:path';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import postgres from 'postgres';
import { type PoolMode, SESSION_TIMEOUTS_MS } from './postgres-pool.ts';

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
  /**
   * `transaction`: the apps reach this database through a transaction-mode pooler, so the
   * runner (on a direct URL) also sets their timeouts on the role in this database.
   */
  poolMode?: PoolMode;
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
      // The role's timeouts (below) must not cut a long migration or the wait for the lock.
      await tx`select set_config('statement_timeout', '0', true), set_config('lock_timeout', '0', true)`;
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
      if (target.poolMode === 'transaction') await setRoleTimeouts(tx);
    });
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * The pools' timeouts as the role's defaults in this database (`ALTER ROLE ... IN DATABASE
 * ... SET`): a transaction-mode pooler refuses them at connect, and a session started later
 * (the pooler's server connections) begins with them. A role may set its own defaults.
 */
async function setRoleTimeouts(tx: postgres.TransactionSql): Promise<void> {
  const [row] = await tx<{ name: string }[]>`select current_database() as name`;
  const database = `"${row!.name.replaceAll('"', '""')}"`;
  // A utility statement takes no parameters: the names and numbers are this file's constants.
  for (const [setting, ms] of Object.entries(SESSION_TIMEOUTS_MS)) {
    await tx.unsafe(`alter role current_user in database ${database} set ${setting} = ${ms}`);
  }
}
