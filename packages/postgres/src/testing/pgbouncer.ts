import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serverUser } from '../embedded-postgres-placement.ts';
import { findFreePort, isPortFree } from '../postgres-admin.ts';

/** Debian's PgBouncer (`apt-get install pgbouncer`, 1.18 on bookworm). */
const PGBOUNCER = '/usr/sbin/pgbouncer';

export interface PgBouncer {
  port: number;
  /** The URL of `database` through the pooler, with the cluster's user and password. */
  url(database: string): string;
  /** SIGKILL, then start again on the same port: every client connection is dropped. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * PgBouncer's configuration, written into `dir`: transaction mode on 127.0.0.1:`port` (no Unix
 * socket) in front of the server `serverUrl` names, any database on it, as the URL's user (its
 * password in an auth file only PgBouncer reads). Returns the command that runs it: PgBouncer
 * refuses to run as root, so as root it runs with `-u` as PostgreSQL's OS user, who then owns
 * `dir` and the files.
 */
export function writePgBouncerConfig(options: {
  dir: string;
  serverUrl: string;
  port: number;
  /** Server connections per database and user (`default_pool_size`). */
  poolSize: number;
}): { command: string; args: string[] } {
  const server = new URL(options.serverUrl);
  const ini = path.join(options.dir, 'pgbouncer.ini');
  const authFile = path.join(options.dir, 'pgbouncer-users.txt');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${options.port}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${authFile}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize}`,
      'max_client_conn = 1000',
      // node-postgres and postgres.js send it at startup; PgBouncer would refuse the connection.
      'ignore_startup_parameters = extra_float_digits',
      // A line per login and logout drowns the launcher's output; errors are still logged.
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
  );
  // The plain password: PgBouncer checks clients with SCRAM and logs in to PostgreSQL with it.
  const [user, password] = [server.username, server.password].map(decodeURIComponent);
  writeFileSync(authFile, `"${user}" "${password}"\n`);
  const runAs = process.getuid?.() === 0 ? serverUser() : undefined;
  for (const file of [options.dir, ini, authFile]) {
    if (runAs) chownSync(file, runAs.uid, runAs.gid);
    chmodSync(file, file === options.dir ? 0o700 : 0o600);
  }
  return { command: PGBOUNCER, args: runAs ? ['-u', runAs.name, ini] : [ini] };
}

/**
 * A real PgBouncer in transaction mode in front of the cluster at `adminUrl` (the test run's
 * embedded PostgreSQL): its configuration (`writePgBouncerConfig`) in a private temporary
 * directory, a free port.
 *
 * @example
 * const bouncer = await startPgBouncer(process.env.ONCE_TEST_ADMIN_URL!, { poolSize: 4 });
 * const sql = postgres(bouncer.url('mydb'), { prepare: false });
 */
export async function startPgBouncer(
  adminUrl: string,
  /** Server connections per database and user (`default_pool_size`). */
  options: { poolSize?: number } = {},
): Promise<PgBouncer> {
  if (!existsSync(PGBOUNCER)) {
    throw new Error(
      `${PGBOUNCER} is missing: apt-get install pgbouncer (as the repository's .ci/run does)`,
    );
  }
  const port = await findFreePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'once-pgbouncer-'));
  const { args } = writePgBouncerConfig({
    dir,
    serverUrl: adminUrl,
    port,
    poolSize: options.poolSize ?? 4,
  });

  let child: ChildProcess | undefined;
  let output = '';
  async function start() {
    const started = spawn(PGBOUNCER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    started.stdout?.on('data', (chunk) => {
      output += chunk;
    });
    started.stderr?.on('data', (chunk) => {
      output += chunk;
    });
    const deadline = Date.now() + 10_000;
    while (await isPortFree(port)) {
      if (started.exitCode !== null || Date.now() > deadline) {
        started.kill('SIGKILL');
        throw new Error(`pgbouncer did not start (exit ${started.exitCode}):\n${output}`);
      }
      await sleep(50);
    }
  }
  async function kill(signal: NodeJS.Signals) {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill(signal);
    await exited;
  }

  await start();
  return {
    port,
    url(database) {
      const url = new URL(adminUrl);
      url.port = String(port);
      url.pathname = `/${database}`;
      return url.toString();
    },
    async restart(downMs = 300) {
      await kill('SIGKILL');
      await sleep(downMs);
      await start();
    },
    async stop() {
      await kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
