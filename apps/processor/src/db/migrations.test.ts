import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { createProcessorTestDatabase } from '../testing/processor-database.ts';
import { processorMigrationsFolder, runProcessorMigrations } from './client.ts';

const run = promisify(execFile);
const repoRoot = path.resolve(processorMigrationsFolder, '../../..');

describe('processor migrations', () => {
  it('journal entries never go back in time (the migrator skips older ones)', async () => {
    const journal = JSON.parse(
      await readFile(path.join(processorMigrationsFolder, 'meta/_journal.json'), 'utf8'),
    ) as { entries: { idx: number; when: number; tag: string }[] };
    expect(journal.entries.length).toBeGreaterThan(0);
    for (let i = 1; i < journal.entries.length; i++) {
      const [prev, cur] = [journal.entries[i - 1]!, journal.entries[i]!];
      expect(cur.idx, `${cur.tag} index`).toBe(prev.idx + 1);
      expect(cur.when, `${cur.tag} is older than ${prev.tag}`).toBeGreaterThan(prev.when);
    }
    const sqlFiles = (await readdir(processorMigrationsFolder)).filter((f) => f.endsWith('.sql'));
    expect(sqlFiles.sort()).toEqual(journal.entries.map((e) => `${e.tag}.sql`).sort());
  });

  it('schema and migrations agree: drizzle-kit generate finds nothing new', async () => {
    const out = await mkdtemp(path.join(os.tmpdir(), 'once-processor-drizzle-check-'));
    try {
      // Generate into a copy so a disagreement never writes into the repository.
      await run('cp', ['-r', `${processorMigrationsFolder}/.`, out]);
      const before = (await readdir(out)).sort();
      const { stdout, stderr } = await run(
        path.join(repoRoot, 'node_modules/.bin/drizzle-kit'),
        [
          'generate',
          '--dialect=postgresql',
          '--schema=./apps/processor/src/db/schema/index.ts',
          `--out=${path.relative(repoRoot, out)}`,
        ],
        { cwd: repoRoot },
      );
      const output = `${stdout}\n${stderr}`;
      expect((await readdir(out)).sort(), `drizzle-kit generated a migration:\n${output}`).toEqual(
        before,
      );
      expect(output).toMatch(/No schema changes/);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 60_000);

  describe('runner', () => {
    let database: Awaited<ReturnType<typeof createProcessorTestDatabase>> | undefined;
    afterAll(async () => {
      await database?.drop();
    });

    it('is safe when several processor instances start at once', async () => {
      database = await createProcessorTestDatabase('migrate_race');
      await Promise.all(Array.from({ length: 6 }, () => runProcessorMigrations(database!.url)));
      const sql = postgres(database.url, { max: 1, onnotice: () => {} });
      const [row] = await sql`select count(*)::int as n from drizzle.__drizzle_migrations`;
      await sql.end();
      const journal = JSON.parse(
        await readFile(path.join(processorMigrationsFolder, 'meta/_journal.json'), 'utf8'),
      );
      expect(row!.n).toBe(journal.entries.length);
    });
  });
});
