import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chown, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import type { OsUser } from './embedded-postgres-placement.ts';
import { PostgresStartupError } from './embedded-postgres-startup-error.ts';

// The embedded cluster's password: one per data directory, random, kept in the data directory
// (mode 0600 inside PostgreSQL's own 0700 directory: readable by the server user, and by
// root, who may start it), and never printed. The server listens on 127.0.0.1 only, so the
// password keeps out other local users, not a network; still, a value written in this
// repository would let any local user in, and a printed one would end up in logs.

/** The file in the data directory that holds the cluster's password. */
export const PASSWORD_FILE = 'once-password';

/** What every cluster made before passwords were per cluster was created with. */
export const LEGACY_PASSWORD = 'password';

/** What a printed URL shows instead of the password. */
const MASKED_PASSWORD = '***';

/** A fresh password for a new cluster: 256 bits, hex (safe in a URL as it is). */
export function newClusterPassword(): string {
  return randomBytes(32).toString('hex');
}

/**
 * The cluster's password from its data directory, or undefined when the cluster has no
 * password file (made before passwords were per cluster: it uses {@link LEGACY_PASSWORD}).
 *
 * @example
 * readClusterPassword('.data/postgres'); // '9f1c...'
 */
export function readClusterPassword(dataDir: string): string | undefined {
  return readFileIfPresent(path.join(dataDir, PASSWORD_FILE))?.trim() || undefined;
}

function readFileIfPresent(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Writes the cluster's password into its data directory, readable by the server user only. */
export async function writeClusterPassword(
  dataDir: string,
  user: OsUser,
  password: string,
): Promise<void> {
  const file = path.join(dataDir, PASSWORD_FILE);
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  if (user.uid !== process.getuid?.()) await chown(file, user.uid, user.gid);
}

/**
 * `url` with its password replaced by `***`: what may be printed.
 *
 * @example
 * maskPassword('postgres://postgres:secret@127.0.0.1:5432/postgres'); // 'postgres://postgres:***@127.0.0.1:5432/postgres'
 */
export function maskPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = MASKED_PASSWORD;
  return parsed.toString();
}

/**
 * The URL an embedded PostgreSQL process printed (its password masked), with the cluster's
 * password read from its data directory: what a launcher connects with.
 *
 * @example
 * const adminUrl = embeddedAdminUrl(readyLineUrl, '/path/to/data'); // postgres://postgres:<password>@...
 */
export function embeddedAdminUrl(printedUrl: string, dataDir: string): string {
  const url = new URL(printedUrl);
  url.password = readClusterPassword(dataDir) ?? LEGACY_PASSWORD;
  return url.toString();
}

/** Where a rotation keeps the new password until the server has taken it. */
const NEXT_PASSWORD_FILE = `${PASSWORD_FILE}.next`;

/**
 * Gives a cluster made with {@link LEGACY_PASSWORD} a random one, on a running server:
 * the new password is written aside first, set on the role, then moved into place, so a
 * crash at any point leaves a password on disk that the server accepts (the old one, or
 * the one aside, which the next start tries and finishes moving).
 *
 * @example
 * const password = await retireLegacyPassword({ port, role: 'postgres', dataDir, osUser });
 */
export async function retireLegacyPassword(cluster: {
  port: number;
  role: string;
  dataDir: string;
  osUser: OsUser;
}): Promise<string> {
  const next = path.join(cluster.dataDir, NEXT_PASSWORD_FILE);
  const pending = readFileIfPresent(next);
  const connect = (password: string) =>
    postgres({
      host: '127.0.0.1',
      port: cluster.port,
      user: cluster.role,
      password,
      database: 'postgres',
      max: 1,
      onnotice: () => {},
    });
  const password = pending?.trim() || newClusterPassword();
  if (!pending) {
    await writeFile(next, `${password}\n`, { mode: 0o600 });
    if (cluster.osUser.uid !== process.getuid?.()) {
      await chown(next, cluster.osUser.uid, cluster.osUser.gid);
    }
  }
  // The role may already have the pending password (a crash after the change, before the move).
  for (const current of [LEGACY_PASSWORD, password]) {
    const sql = connect(current);
    try {
      await sql.unsafe(`alter role "${cluster.role}" password '${password}'`);
      await rename(next, path.join(cluster.dataDir, PASSWORD_FILE));
      return password;
    } catch (error) {
      if ((error as { code?: string }).code !== '28P01') throw error; // not "password failed"
    } finally {
      await sql.end({ timeout: 1 });
    }
  }
  throw new PostgresStartupError(
    `the PostgreSQL cluster in ${cluster.dataDir} has no ${PASSWORD_FILE} and refuses the old default password: ` +
      `move it aside (mv ${cluster.dataDir} ${cluster.dataDir}.old) to start with a new one`,
  );
}
