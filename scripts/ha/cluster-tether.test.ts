// On demand (ONCE_HA_E2E=1, like the stage's scene 8 spec: a cluster costs 30-45 s): a
// launcher that dies, however it dies, leaves no etcd, Patroni or PostgreSQL of its cluster
// behind. The launcher is `npm run ha` (scripts/ha/main.ts), really SIGKILLed; the cluster's
// tether (process-group-tether.cjs) must stop what it started. A start that fails midway
// (etcd up, a Patroni dead) must stop the rest itself.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { findFreePort } from '@once/postgres';
import { describe, expect, it } from 'vitest';
import { haPackagesInstalled } from './install.ts';

const launcherScript = fileURLToPath(new URL('./main.ts', import.meta.url));
const onDemand = process.env.ONCE_HA_E2E === '1';
if (!onDemand) console.warn('cluster tether test: on demand only (ONCE_HA_E2E=1): skipped');

/** `pid name` of every process working in `dir` or naming it on its command line. */
function clusterProcesses(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cwd === dir || cwd.startsWith(`${dir}/`) || args.includes(dir)) {
        found.push(`${pid} ${readFileSync(`/proc/${pid}/comm`, 'utf8').trim()}`);
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !condition()) await new Promise((r) => setTimeout(r, 250));
  return condition();
}

function startLauncher(basePort: number): { launcher: ChildProcess; output: string[] } {
  const output: string[] = [];
  const launcher = spawn(
    process.execPath,
    ['--import', 'tsx', launcherScript, '--base-port', String(basePort)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  for (const stream of [launcher.stdout!, launcher.stderr!]) {
    stream.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
  }
  return { launcher, output };
}

describe.skipIf(!onDemand || !haPackagesInstalled())('the cluster of a launcher that dies', () => {
  it('a SIGKILLed launcher leaves no etcd, Patroni or PostgreSQL of its cluster behind', async () => {
    const { launcher, output } = startLauncher(await findFreePort({ count: 8 }));
    let dir: string | undefined;
    try {
      expect(
        await waitUntil(() => /logs and data: (\S+);/.test(output.join('')), 120_000),
        output.join(''),
      ).toBe(true);
      dir = output.join('').match(/logs and data: (\S+);/)![1]!;
      const running = clusterProcesses(dir);
      const count = (name: string) => running.filter((line) => line.endsWith(` ${name}`)).length;
      expect({ etcd: count('etcd'), patroni: count('patroni') }, running.join(', ')).toEqual({
        etcd: 1,
        patroni: 3,
      });
      expect(count('postgres'), running.join(', ')).toBeGreaterThanOrEqual(3);

      launcher.kill('SIGKILL');
      const cluster = dir;
      expect(
        await waitUntil(() => clusterProcesses(cluster).length === 0, 30_000),
        `still running 30 s after the launcher's SIGKILL: ${clusterProcesses(cluster).join(', ')}`,
      ).toBe(true);
    } finally {
      launcher.kill('SIGKILL');
      // The tether stops processes only; a dead launcher's cluster keeps its folder (its logs).
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('a start that fails midway (etcd up, a Patroni dead) stops what it started', async () => {
    const basePort = await findFreePort({ count: 8 });
    // pg1's REST API port taken: its Patroni exits at start, after etcd answered.
    const taken = createServer().listen(basePort + 5, '127.0.0.1');
    const { launcher, output } = startLauncher(basePort);
    let dir: string | undefined;
    try {
      const code = await new Promise((resolve) => launcher.once('exit', resolve));
      const said = output.join('');
      expect(said).toMatch(/HA cluster: pg1 exited \(code 1\) while the cluster started/);
      expect(code).toBe(1);
      dir = said.match(/its log: (\S+)\/pg1\.log/)![1]!;
      const cluster = dir;
      expect(
        await waitUntil(() => clusterProcesses(cluster).length === 0, 10_000),
        `still running after the failed start: ${clusterProcesses(cluster).join(', ')}`,
      ).toBe(true);
    } finally {
      taken.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
