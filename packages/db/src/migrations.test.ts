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
