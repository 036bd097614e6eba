// Installs the replicated cluster's programs from Debian's archive when they are missing, the
// way .ci/run installs Chromium: PostgreSQL 15, Patroni (the HA manager) and etcd (its
// consensus store). See docs/decisions/0013-ha-engine.md.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';

/** Debian's PostgreSQL 15 binaries (postgres, pg_ctl, pg_rewind, pg_basebackup). */
export const POSTGRES_BIN_DIR = '/usr/lib/postgresql/15/bin';

const PACKAGES = ['postgresql-15', 'patroni', 'etcd-server', 'etcd-client'];

function onPath(program: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** True when every program the cluster runs is installed. */
export function haPackagesInstalled(): boolean {
  return (
    existsSync(`${POSTGRES_BIN_DIR}/postgres`) &&
    onPath('patroni') &&
    onPath('etcd') &&
    onPath('etcdctl')
  );
}

/** apt-get installs what is missing (as root, else through sudo); their services stay unused. */
export function ensureHaPackages(log: (line: string) => void = () => {}): void {
  if (haPackagesInstalled()) return;
  const root = os.userInfo().uid === 0;
  // `env` carries DEBIAN_FRONTEND through sudo, which resets the environment.
  const env = [...(root ? [] : ['env']), 'DEBIAN_FRONTEND=noninteractive'];
  const run = (args: string[]) =>
    execFileSync(root ? 'env' : 'sudo', [...env, ...args], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  log(`installing ${PACKAGES.join(' ')} with apt-get`);
  run(['apt-get', 'update', '-qq']);
  run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...PACKAGES]);
  if (!haPackagesInstalled()) throw new Error(`apt-get did not install ${PACKAGES.join(' ')}`);
}
