import { statSync } from 'node:fs';
import { mkdtemp, rm, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnEmbeddedPostgres } from './embedded-postgres-child.ts';
import { LEGACY_PASSWORD, maskPassword, PASSWORD_FILE } from './embedded-postgres-password.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** An empty directory of its own (as root, the server user is given it). */
async function dataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'once-pg-password-'));
  dirs.push(dir);
  return dir;
}

/** Starts the server process on `dir`, every line it prints collected. */
async function start(dir: string) {
  const lines: string[] = [];
  const pg = await spawnEmbeddedPostgres({
    dataDir: dir,
    durability: 'fast',
    log: (line) => lines.push(line),
  });
  return { pg, lines, password: decodeURIComponent(new URL(pg.adminUrl).password) };
}

async function accepts(url: string, password: string): Promise<boolean> {
  const target = new URL(url);
  target.password = password;
  const sql = postgres(target.toString(), { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    await sql`select 1`;
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === '28P01') return false;
    throw error;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

describe('the embedded cluster password', () => {
  it('is random per data directory, kept across restarts, and never printed', async () => {
    const dir = await dataDir();
    const first = await start(dir);
    try {
      expect(first.password).toMatch(/^[0-9a-f]{64}$/);
      expect(first.lines).toContainEqual(
        expect.stringMatching(
          /^POSTGRES_READY postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/postgres$/,
        ),
      );
      expect(first.lines.filter((line) => line.includes(first.password))).toEqual([]);
      expect(await accepts(first.pg.adminUrl, LEGACY_PASSWORD)).toBe(false);
      expect(statSync(path.join(dir, PASSWORD_FILE)).mode & 0o777).toBe(0o600);
    } finally {
      await first.pg.stop();
    }
    const again = await start(dir);
    try {
      expect(again.password).toBe(first.password);
    } finally {
      await again.pg.stop();
    }
    const other = await start(await dataDir());
    try {
      expect(other.password).not.toBe(first.password);
    } finally {
      await other.pg.stop();
    }
  }, 120_000);

  it('a cluster made with the old fixed password gets a random one at its next start', async () => {
    const dir = await dataDir();
    const first = await start(dir);
    // What every cluster made before looked like: the fixed password, no password file.
    const sql = postgres(first.pg.adminUrl, { max: 1, onnotice: () => {} });
    await sql.unsafe(`alter role postgres password '${LEGACY_PASSWORD}'`);
    await sql.end();
    await first.pg.stop();
    await unlink(path.join(dir, PASSWORD_FILE));

    const upgraded = await start(dir);
    try {
      expect(upgraded.password).toMatch(/^[0-9a-f]{64}$/);
      expect(await accepts(upgraded.pg.adminUrl, LEGACY_PASSWORD)).toBe(false);
      expect(await accepts(upgraded.pg.adminUrl, upgraded.password)).toBe(true);
      expect(upgraded.lines.filter((line) => line.includes(upgraded.password))).toEqual([]);
    } finally {
      await upgraded.pg.stop();
    }
  }, 120_000);

  it('masks the password of a URL it prints', () => {
    expect(maskPassword('postgres://postgres:s3cret@127.0.0.1:5432/once')).toBe(
      'postgres://postgres:***@127.0.0.1:5432/once',
    );
    expect(maskPassword('postgres://postgres@127.0.0.1:5432/once')).toBe(
      'postgres://postgres@127.0.0.1:5432/once',
    );
  });
});
