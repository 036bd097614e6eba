import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
 * A real PgBouncer in transaction mode in front of the cluster at `adminUrl` (the test run's
 * embedded PostgreSQL): its own ini and auth file in a private temporary directory, a free
 * port on 127.0.0.1, no Unix socket. It refuses to run as root ("PgBouncer should not run as root"), so as root it
 * is started with `-u` as the `postgres` user (or `nobody`), which owns that directory.
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
  const server = new URL(adminUrl);
  const user = decodeURIComponent(server.username);
  const password = decodeURIComponent(server.password);
  const port = await findFreePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'once-pgbouncer-'));
  const ini = path.join(dir, 'pgbouncer.ini');
  const authFile = path.join(dir, 'users.txt');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${authFile}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize ?? 4}`,
      'max_client_conn = 500',
      // node-postgres and postgres.js send it at startup; PgBouncer would refuse the connection.
      'ignore_startup_parameters = extra_float_digits',
      '',
    ].join('\n'),
  );
  // The plain password: PgBouncer checks clients with SCRAM and logs in to PostgreSQL with it.
  writeFileSync(authFile, `"${user}" "${password}"\n`);
  const runAs = process.getuid?.() === 0 ? osUserForPgBouncer() : undefined;
  for (const file of [dir, ini, authFile]) {
    if (runAs) chownSync(file, runAs.uid, runAs.gid);
    chmodSync(file, file === dir ? 0o700 : 0o600);
  }
  const args = runAs ? ['-u', runAs.name, ini] : [ini];

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

function osUserForPgBouncer(): { name: string; uid: number; gid: number } {
  for (const name of ['postgres', 'nobody']) {
    try {
      const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }));
      const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }));
      return { name, uid, gid };
    } catch {
      // No such user: try the next.
    }
  }
  throw new Error('running as root, PgBouncer needs another OS user to run as: postgres or nobody');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
