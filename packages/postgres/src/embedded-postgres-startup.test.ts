import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from './embedded-postgres.ts';
import { spawnEmbeddedPostgres } from './embedded-postgres-child.ts';
import { locateBinaries, persistentDataDirFor } from './embedded-postgres-placement.ts';
import { PostgresStartupError } from './embedded-postgres-startup-error.ts';
import { findFreePort } from './postgres-admin.ts';

const asRoot = process.getuid?.() === 0;
const dirs: string[] = [];
const previousStaging = process.env.ONCE_POSTGRES_STAGING_DIR;

afterAll(async () => {
  if (previousStaging === undefined) delete process.env.ONCE_POSTGRES_STAGING_DIR;
  else process.env.ONCE_POSTGRES_STAGING_DIR = previousStaging;
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(prefix: string, base = os.tmpdir()): Promise<string> {
  const dir = await mkdtemp(path.join(base, prefix));
  dirs.push(dir);
  return dir;
}

/** Every line a failed start printed: exactly one says what to do, none is a stack frame. */
async function failedStart(
  options: Parameters<typeof spawnEmbeddedPostgres>[0],
): Promise<{ error: Error; lines: string[] }> {
  const lines: string[] = [];
  const error = await spawnEmbeddedPostgres({ ...options, log: (l) => lines.push(l) }).then(
    (pg) => {
      void pg.stop();
      throw new Error('PostgreSQL started although it should not have');
    },
    (e: Error) => e,
  );
  return { error, lines };
}

function expectOneLine(failure: { error: Error; lines: string[] }, pattern: RegExp) {
  expect(failure.error).toBeInstanceOf(PostgresStartupError);
  expect(failure.error.message).toMatch(pattern);
  expect(failure.error.message).not.toContain('\n');
  expect(failure.lines.filter((l) => l.startsWith('POSTGRES_FAILED '))).toHaveLength(1);
  expect(failure.lines.filter((l) => /^\s+at /.test(l))).toEqual([]);
}

describe('embedded PostgreSQL as root, from a directory the postgres user cannot reach', () => {
  it.skipIf(!asRoot)(
    'stages the binaries and the data where it can reach them, and keeps the data across restarts',
    async () => {
      // A checkout in root's home: the binaries sit below a 0700 directory.
      const home = await tempDir('once-0700-home-', os.homedir());
      await chmod(home, 0o700);
      const binaries = path.join(home, 'native');
      execFileSync('cp', ['-a', locateBinaries().root, binaries]);
      const staging = await tempDir('once-staging-');
      await chmod(staging, 0o755);
      process.env.ONCE_POSTGRES_STAGING_DIR = staging;

      const dataDir = await persistentDataDirFor(path.join(home, '.data', 'postgres'));
      expect(dataDir.startsWith(path.join(staging, 'data'))).toBe(true);

      const logs: string[] = [];
      const start = () =>
        startEmbeddedPostgres({
          dataDir,
          binariesDir: binaries,
          durability: 'fast',
          log: (l) => logs.push(l),
        });
      const first = await start();
      const sql = postgres(first.adminUrl, { max: 1, onnotice: () => {} });
      await sql`create table survives (id int)`;
      await sql`insert into survives values (7)`;
      await sql.end();
      await first.stop();
      expect(logs.some((l) => l.includes(`copied from ${binaries}`))).toBe(true);

      const second = await start();
      const again = postgres(second.adminUrl, { max: 1, onnotice: () => {} });
      expect(await again`select id from survives`).toEqual([{ id: 7 }]);
      await again.end();
      await second.stop();
    },
    90_000,
  );
});

describe('embedded PostgreSQL start-up failures are one line saying what to do', () => {
  it('port taken, and the throw-away data directory made for it is removed', async () => {
    const port = await findFreePort();
    const holder = net.createServer().listen(port, '127.0.0.1');
    await new Promise((r) => holder.once('listening', r));
    // The cluster's child makes its throw-away directory in its TMPDIR: this one, watched.
    const tmp = await tempDir('once-tmp-');
    await chmod(tmp, 0o755);
    const previousTmp = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      expectOneLine(await failedStart({ port }), new RegExp(`port ${port} .*already in use`));
      expect((await readdir(tmp)).filter((name) => name.startsWith('once-pg-'))).toEqual([]);
    } finally {
      if (previousTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previousTmp;
      holder.close();
    }
  }, 30_000);

  it('another server already running on the data directory', async () => {
    const dataDir = await tempDir('once-pg-busy-');
    const running = await spawnEmbeddedPostgres({ dataDir, durability: 'fast' });
    try {
      expectOneLine(
        await failedStart({ dataDir, durability: 'fast' }),
        /already running PostgreSQL .*stop it first/,
      );
    } finally {
      await running.stop();
    }
  }, 60_000);

  it('a data directory that holds something else', async () => {
    const dataDir = await tempDir('once-pg-other-');
    await writeFile(path.join(dataDir, 'notes.txt'), 'not a cluster');
    expectOneLine(await failedStart({ dataDir }), /not empty but holds no PostgreSQL cluster/);
  }, 30_000);

  it.skipIf(!asRoot)(
    'a data directory owned by someone else',
    async () => {
      // Root made this cluster folder itself; the server would run as postgres.
      const dataDir = await tempDir('once-pg-owned-');
      await writeFile(path.join(dataDir, 'PG_VERSION'), '18\n');
      expectOneLine(await failedStart({ dataDir }), /belongs to root .*move it aside/);
    },
    30_000,
  );

  it('binaries missing', async () => {
    const empty = await tempDir('once-no-binaries-');
    await mkdir(path.join(empty, 'bin'));
    const error = await startEmbeddedPostgres({ binariesDir: empty }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(PostgresStartupError);
    expect((error as Error).message).toMatch(/binaries are missing .*run npm ci/);
  });
});
