import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { migrationsFolder, runMigrations } from './migrate.ts';
import { createTestDatabase } from './testing/index.ts';

const run = promisify(execFile);
const repoRoot = path.resolve(migrationsFolder, '..');

describe('drizzle migrations', () => {
  it('journal entries never go back in time (the migrator skips older ones)', async () => {
    const journal = JSON.parse(
      await readFile(path.join(migrationsFolder, 'meta/_journal.json'), 'utf8'),
    ) as {
      entries: { idx: number; when: number; tag: string }[];
    };
    expect(journal.entries.length).toBeGreaterThan(0);
    for (let i = 1; i < journal.entries.length; i++) {
      const [prev, cur] = [journal.entries[i - 1]!, journal.entries[i]!];
      expect(cur.idx, `${cur.tag} index`).toBe(prev.idx + 1);
      expect(cur.when, `${cur.tag} is older than ${prev.tag}`).toBeGreaterThan(prev.when);
    }
    const sqlFiles = (await readdir(migrationsFolder)).filter((f) => f.endsWith('.sql'));
    expect(sqlFiles.sort()).toEqual(journal.entries.map((e) => `${e.tag}.sql`).sort());
  });

  it('a migration drops only what the release before it no longer used (rolling upgrades)', async () => {
    // During a rolling upgrade the previous release's webs run on the new schema, so a table or
    // column may be dropped only once the schema one migration earlier (its snapshot) no longer
    // had it. 0016 predates the rule: its webs must all be replaced before it runs.
    const before = new Set(['0016_rate_limit_arrival']);
    const journal = JSON.parse(
      await readFile(path.join(migrationsFolder, 'meta/_journal.json'), 'utf8'),
    ) as { entries: { idx: number; tag: string }[] };
    const snapshot = async (idx: number) =>
      JSON.parse(
        await readFile(
          path.join(migrationsFolder, `meta/${String(idx).padStart(4, '0')}_snapshot.json`),
          'utf8',
        ),
      ) as { tables: Record<string, { columns: Record<string, unknown> }> };
    const dropped: string[] = [];
    for (const { idx, tag } of journal.entries.slice(1)) {
      if (before.has(tag)) continue;
      const sql = await readFile(path.join(migrationsFolder, `${tag}.sql`), 'utf8');
      const { tables } = await snapshot(idx - 1);
      for (const [, table] of sql.matchAll(/DROP TABLE (?:IF EXISTS )?"(\w+)"/g))
        if (tables[`public.${table}`]) dropped.push(`${tag} drops table ${table}`);
      for (const [, table, column] of sql.matchAll(/ALTER TABLE "(\w+)" DROP COLUMN "(\w+)"/g))
        if (tables[`public.${table}`]?.columns[column!])
          dropped.push(`${tag} drops column ${table}.${column}`);
    }
    expect(
      dropped,
      'still used by the release before: mark it unused, drop it a release later',
    ).toEqual([]);
  });

  it('schema and migrations agree: drizzle-kit generate finds nothing new', async () => {
    const out = await mkdtemp(path.join(os.tmpdir(), 'once-drizzle-check-'));
    try {
      // Generate into a copy so a disagreement never writes into the repository.
      await run('cp', ['-r', `${migrationsFolder}/.`, out]);
      const before = (await readdir(out)).sort();
      const { stdout, stderr } = await run(
        path.join(repoRoot, 'node_modules/.bin/drizzle-kit'),
        // drizzle-kit only accepts an output folder relative to the working directory.
        [
          'generate',
          '--dialect=postgresql',
          '--schema=./packages/db/src/schema/index.ts',
          `--out=${path.relative(repoRoot, out)}`,
        ],
        { cwd: repoRoot },
      );
      const after = (await readdir(out)).sort();
      const output = `${stdout}\n${stderr}`;
      expect(after, `drizzle-kit generated a migration:\n${output}`).toEqual(before);
      expect(output).toMatch(/No schema changes/);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 60_000);

  describe('runner', () => {
    const dbs: { drop(): Promise<void> }[] = [];
    afterAll(async () => {
      for (const db of dbs) await db.drop();
    });

    it('is safe when several processes start at once', async () => {
      const db = await createTestDatabase('migrate_race');
      dbs.push(db);
      // Already migrated once by createTestDatabase; now race eight more runners.
      await Promise.all(Array.from({ length: 8 }, () => runMigrations(db.url)));
      const rows = await db.client.sql`select count(*)::int as n from drizzle.__drizzle_migrations`;
      const journal = JSON.parse(
        await readFile(path.join(migrationsFolder, 'meta/_journal.json'), 'utf8'),
      );
      expect(rows[0]!.n).toBe(journal.entries.length);
    });
  });
});
