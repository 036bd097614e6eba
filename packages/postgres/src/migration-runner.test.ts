import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations, type MigrationTarget } from './migration-runner.ts';
import { createEmptyTestDatabase, type EmptyTestDatabase } from './testing/index.ts';

/** A drizzle-kit style folder: `meta/_journal.json` plus one SQL file per entry. */
function migrationsFolder(entries: { tag: string; when: number; sql: string }[]): string {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'once-migrations-'));
  mkdirSync(path.join(folder, 'meta'));
  writeFileSync(
    path.join(folder, 'meta', '_journal.json'),
    JSON.stringify({
      version: '7',
      dialect: 'postgresql',
      entries: entries.map((e, idx) => ({
        idx,
        version: '7',
        when: e.when,
        tag: e.tag,
        breakpoints: true,
      })),
    }),
  );
  for (const entry of entries) writeFileSync(path.join(folder, `${entry.tag}.sql`), entry.sql);
  return folder;
}

const LOCK_ID = 0x0_7e_57_01;

describe('applyMigrations', () => {
  let database: EmptyTestDatabase;
  let sql: postgres.Sql;
  const folders: string[] = [];
  const folder = (entries: Parameters<typeof migrationsFolder>[0]) => {
    const created = migrationsFolder(entries);
    folders.push(created);
    return created;
  };

  beforeAll(async () => {
    database = await createEmptyTestDatabase('migration_runner');
    sql = postgres(database.url, { max: 4, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql?.end();
    await database?.drop();
    for (const f of folders) rmSync(f, { recursive: true, force: true });
  });

  const first = {
    tag: '0000_first',
    when: 1_700_000_000_000,
    sql: 'create table t1 (id int primary key);\n--> statement-breakpoint\ninsert into t1 values (1);',
  };
  const second = { tag: '0001_second', when: 1_700_000_100_000, sql: 'create table t2 (id int);' };

  it('waits for the lock INSIDE its migration transaction (transaction-scoped: it ends with it)', async () => {
    const target: MigrationTarget = {
      folder: folder([first]),
      lockId: LOCK_ID,
      applicationName: 'test-migrate-wait',
    };
    // Another migrator holds the lock in its own open transaction.
    const holder = await sql.reserve();
    await holder`begin`;
    await holder`select pg_advisory_xact_lock(${LOCK_ID})`;
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await holder`commit`;
      holder.release();
    };
    try {
      const running = applyMigrations(database.url, target);
      let waiting: { query: string; in_transaction: boolean }[] = [];
      for (let i = 0; i < 200 && waiting.length === 0; i++) {
        waiting = await sql<{ query: string; in_transaction: boolean }[]>`
          select query, xact_start is not null and state = 'active' as in_transaction
          from pg_stat_activity
          where application_name = ${target.applicationName}
            and wait_event_type = 'Lock' and wait_event = 'advisory'`;
        if (waiting.length === 0) await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(waiting).toHaveLength(1);
      expect(waiting[0]!.query).toContain('pg_advisory_xact_lock');
      expect(waiting[0]!.in_transaction).toBe(true);
      // Nothing is applied while it waits; the holder's commit lets it through.
      expect(await tableExists('t1')).toBe(false);
      await release();
      await running;
      expect(await tableExists('t1')).toBe(true);
    } finally {
      await release();
    }
    // The migration lock does not survive the run. (Only this lock: tests running beside
    // this one take advisory locks of their own in the same cluster.)
    const locks = await sql`
      select 1 from pg_locks
      where locktype = 'advisory' and objsubid = 1
        and ((classid::bigint << 32) | objid::bigint) = ${LOCK_ID}`;
    expect(locks).toHaveLength(0);
  });

  it('applies each migration once when many processes start together, and picks up new ones', async () => {
    const entries = [first, second];
    const target: MigrationTarget = {
      folder: folder(entries),
      lockId: LOCK_ID,
      applicationName: 'test-migrate-race',
    };
    await Promise.all(Array.from({ length: 6 }, () => applyMigrations(database.url, target)));
    const journal = await sql<{ created_at: string }[]>`
      select created_at from drizzle.__drizzle_migrations order by created_at`;
    expect(journal.map((r) => Number(r.created_at))).toEqual([first.when, second.when]);
    expect(await tableExists('t2')).toBe(true);
  });

  it('a failing migration rolls back with the lock: nothing of it stays, the next run can proceed', async () => {
    const broken = {
      tag: '0002_broken',
      when: 1_700_000_200_000,
      sql: 'create table t3 (id int);\n--> statement-breakpoint\nselect * from no_such_table;',
    };
    const target: MigrationTarget = {
      folder: folder([first, second, broken]),
      lockId: LOCK_ID,
      applicationName: 'test-migrate-broken',
    };
    await expect(applyMigrations(database.url, target)).rejects.toThrow(/no_such_table/);
    expect(await tableExists('t3')).toBe(false);
    const fixed = { ...broken, sql: 'create table t3 (id int);' };
    await applyMigrations(database.url, { ...target, folder: folder([first, second, fixed]) });
    expect(await tableExists('t3')).toBe(true);
  });

  it("behind a transaction pooler: sets the pools' timeouts on its own role in this database only, not on itself", async () => {
    // An ordinary role, as on a managed server: a role may set its own session defaults.
    const role = `migrator_${randomBytes(4).toString('hex')}`;
    const own = await createEmptyTestDatabase('migration_runner_role');
    const database_ = new URL(own.url).pathname.slice(1);
    const admin = postgres(own.url, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create role ${role} login password 'migrator'`);
    await admin.unsafe(`grant all on database ${database_} to ${role}`);
    await admin.unsafe(`grant create on schema public to ${role}`);
    const asRole = (db: string) => {
      const url = new URL(own.url);
      url.username = role;
      url.password = 'migrator';
      url.pathname = `/${db}`;
      return url.toString();
    };
    const timeoutsIn = async (db: string) => {
      const session = postgres(asRole(db), { max: 1, onnotice: () => {} });
      try {
        const [row] = await session`
          select current_setting('statement_timeout') as statement,
            current_setting('lock_timeout') as lock,
            current_setting('idle_in_transaction_session_timeout') as idle`;
        return row;
      } finally {
        await session.end();
      }
    };
    const target: MigrationTarget = {
      folder: folder([first]),
      lockId: LOCK_ID + 1,
      applicationName: 'test-migrate-pooled',
    };
    try {
      await applyMigrations(asRole(database_), target);
      expect(await timeoutsIn(database_)).toEqual({ statement: '0', lock: '0', idle: '0' });

      await applyMigrations(asRole(database_), { ...target, poolMode: 'transaction' });
      expect(await timeoutsIn(database_)).toEqual({ statement: '15s', lock: '5s', idle: '30s' });
      expect(await timeoutsIn('postgres')).toEqual({ statement: '0', lock: '0', idle: '0' });

      // Its own session starts with them now, and runs its migrations without them.
      const checks = {
        tag: '0001_runs_without_timeouts',
        when: 1_700_000_200_000,
        sql: `do $$ begin
          if current_setting('statement_timeout') <> '0' or current_setting('lock_timeout') <> '0'
          then raise exception 'the migration runs with timeouts'; end if; end $$;`,
      };
      await applyMigrations(asRole(database_), {
        ...target,
        folder: folder([first, checks]),
        poolMode: 'transaction',
      });
    } finally {
      await admin.unsafe(`drop owned by ${role}`);
      await admin.end();
      await own.drop();
      await sql.unsafe(`drop role ${role}`);
    }
  });

  async function tableExists(name: string): Promise<boolean> {
    const [row] = await sql<{ found: boolean }[]>`
      select to_regclass(${`public.${name}`}) is not null as found`;
    return row!.found;
  }
});
