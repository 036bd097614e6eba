import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { EmbeddedPostgresHandle } from './embedded-postgres.ts';
import { embeddedAdminUrl } from './embedded-postgres-password.ts';
import { POSTGRES_FAILED_PREFIX, PostgresStartupError } from './embedded-postgres-startup-error.ts';
import { findFreePort } from './postgres-admin.ts';

const processScript = fileURLToPath(new URL('./embedded-postgres-process.ts', import.meta.url));

interface SpawnEmbeddedPostgresOptions {
  /** Omit for a throw-away cluster. */
  dataDir?: string;
  port?: number;
  durability?: 'durable' | 'fast';
  /** Databases to create once the server is up. */
  databases?: string[];
  /** Lines the server process prints (default: dropped). */
  log?: (line: string) => void;
}

export interface EmbeddedPostgresChild extends EmbeddedPostgresHandle {
  readonly child: ChildProcess;
}

/**
 * Starts an embedded PostgreSQL in a child process, so a SIGKILLed launcher never leaves a
 * server behind; the child stops it on SIGTERM or when this process dies.
 */
export async function spawnEmbeddedPostgres(
  options: SpawnEmbeddedPostgresOptions = {},
): Promise<EmbeddedPostgresChild> {
  const port = options.port ?? (await findFreePort());
  const args = [
    processScript,
    '--port',
    String(port),
    '--durability',
    options.durability ?? 'durable',
  ];
  if (options.dataDir) args.push('--data-dir', options.dataDir);
  for (const database of options.databases ?? []) args.push('--database', database);
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = options.log ?? (() => {});
  const tail: string[] = [];
  let failure: string | undefined;
  let dataDir = options.dataDir ?? '';
  const adminUrl = await new Promise<string>((resolve, reject) => {
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      log(line);
      if (line.startsWith(POSTGRES_FAILED_PREFIX))
        failure = line.slice(POSTGRES_FAILED_PREFIX.length);
      const at = line.match(/^PostgreSQL data directory: (.+)$/);
      if (at) dataDir = at[1]!;
      // Printed with its password masked: the password is in the data directory.
      const match = line.match(/^POSTGRES_READY (\S+)$/);
      if (match) resolve(embeddedAdminUrl(match[1]!, dataDir));
    };
    const out = createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', onLine);
    // stdout's 'close' comes after its last line, so the failure line is never missed.
    const outClosed = new Promise<void>((r) => out.once('close', () => r()));
    child.once(
      'exit',
      (code) =>
        void outClosed.then(() =>
          reject(
            failure
              ? new PostgresStartupError(failure)
              : new Error(
                  `embedded PostgreSQL exited with ${code} before it was ready:\n${tail.join('\n')}`,
                ),
          ),
        ),
    );
  });
  const databaseUrl = (database: string) => {
    const url = new URL(adminUrl);
    url.pathname = `/${database}`;
    return url.toString();
  };
  return {
    child,
    adminUrl,
    port,
    dataDir,
    databaseUrl,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}
