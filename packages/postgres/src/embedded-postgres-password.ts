import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chown, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import type { OsUser } from './embedded-postgres-placement.ts';
import { PostgresStartupError } from './embedded-postgres-startup-error.ts';

// The embedded cluster's password: random per data directory, kept there (0600) and never
// printed. It keeps out other local users (the server listens on 127.0.0.1 only).

export const PASSWORD_FILE = 'once-password';

/** What every cluster made before passwords were per cluster was created with. */
export const LEGACY_PASSWORD = 'password';

/** 256 bits, hex (safe in a URL as it is). */
export function newClusterPassword(): string {
  return randomBytes(32).toString('hex');
}

/** Undefined for a cluster made before passwords were per cluster ({@link LEGACY_PASSWORD}). */
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

export async function writeClusterPassword(
  dataDir: string,
  user: OsUser,
  password: string,
): Promise<void> {
  const file = path.join(dataDir, PASSWORD_FILE);
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  if (user.uid !== process.getuid?.()) await chown(file, user.uid, user.gid);
}

/** `url` with its password replaced by `***`: what may be printed. */
export function maskPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/** The URL an embedded PostgreSQL process printed (masked), with the cluster's password. */
export function embeddedAdminUrl(printedUrl: string, dataDir: string): string {
  const url = new URL(printedUrl);
  url.password = readClusterPassword(dataDir) ?? LEGACY_PASSWORD;
  return url.toString();
}

/**
 * Gives a running cluster made with {@link LEGACY_PASSWORD} a random one: written aside, set
 * on the role, then moved into place, so a crash at any point leaves one the server accepts.
 */
export async function retireLegacyPassword(cluster: {
  port: number;
  role: string;
  dataDir: string;
  osUser: OsUser;
}): Promise<string> {
  const next = path.join(cluster.dataDir, `${PASSWORD_FILE}.next`);
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
