import { readFileSync, rmSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isProcessAlive } from '@once/postgres';

// How `npm run verify` finds the running demo. The demo's databases are not at a fixed
// address with a fixed password: the embedded PostgreSQL has a random password of its own,
// and `--ha` runs a throw-away Patroni cluster on a multi-host URL. So the launcher, once
// everything is up, writes the URLs its apps were given into a file only its user can read
// (they hold the passwords), and removes it when it stops.

/** What the launcher writes: the URLs of the running demo, and who wrote them. */
export interface DemoConnection {
  /** The launcher's pid: a file left behind by a killed launcher names a dead process. */
  pid: number;
  databaseUrl: string;
  processorDatabaseUrl: string;
}

/**
 * Where the running demo's connection is kept: `.data/demo-connection.json` under the
 * checkout (next to the embedded PostgreSQL's data), or `ONCE_DEMO_CONNECTION_FILE`.
 */
export function demoConnectionFile(repoRoot: string): string {
  return process.env.ONCE_DEMO_CONNECTION_FILE || path.join(repoRoot, '.data/demo-connection.json');
}

/** Writes the connection (mode 0600, replaced in one rename: a reader never sees half a file). */
export async function writeDemoConnection(file: string, connection: DemoConnection): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const next = `${file}.${process.pid}.tmp`;
  await writeFile(next, `${JSON.stringify(connection)}\n`, { mode: 0o600 });
  await rename(next, file);
}

/**
 * Removes the file if it is this process's (another demo may have started since and written
 * its own). Synchronous, so it also runs from an `exit` handler.
 */
export function removeDemoConnection(file: string, pid = process.pid): void {
  if (readConnectionFile(file)?.pid === pid) rmSync(file, { force: true });
}

/**
 * The running demo's connection, or undefined when no demo runs (no file, or the launcher
 * that wrote it is gone).
 */
export function readDemoConnection(file: string): DemoConnection | undefined {
  const connection = readConnectionFile(file);
  return connection && isProcessAlive(connection.pid) ? connection : undefined;
}

function readConnectionFile(file: string): DemoConnection | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const parsed = JSON.parse(text) as Partial<DemoConnection>;
  if (
    typeof parsed.pid !== 'number' ||
    typeof parsed.databaseUrl !== 'string' ||
    typeof parsed.processorDatabaseUrl !== 'string'
  ) {
    throw new Error(`${file} is not a demo connection file: remove it`);
  }
  return parsed as DemoConnection;
}
