import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { findFreePort } from '@once/postgres';
import { afterAll, describe, expect, it } from 'vitest';

/** `npm run demo`'s start-up failures: one line on stderr saying what to do, exit code 1. */
const demo = fileURLToPath(new URL('./demo.ts', import.meta.url));
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function freePorts() {
  return {
    ONCE_WEB_PORT: String(await findFreePort()),
    ONCE_PROCESSOR_PORT: String(await findFreePort()),
    ONCE_WORKER_HEALTH_PORT: String(await findFreePort()),
    ONCE_PG_PORT: String(await findFreePort()),
  };
}

function runDemo(env: Record<string, string>, args: string[] = []) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', demo, '--skip-build', '--workers', '1', ...args],
      {
        env: { ...process.env, DATABASE_URL: '', NO_COLOR: '1', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    // Should it start after all, stop it (SIGTERM stops everything) rather than leave it running.
    const timer = setTimeout(() => child.kill('SIGTERM'), 40_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function expectOneLine(
  run: { code: number | null; stdout: string; stderr: string },
  pattern: RegExp,
) {
  expect(run.code).toBe(1);
  const lines = run.stderr.trim().split('\n');
  expect(lines, run.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(`${run.stdout}\n${run.stderr}`).not.toMatch(/^\s+at /m);
}

describe('npm run demo: a start-up failure is one line saying what to do', () => {
  it('web port taken (another demo running)', async () => {
    const env = await freePorts();
    const holder = net.createServer().listen(Number(env.ONCE_WEB_PORT), '127.0.0.1');
    await new Promise((r) => holder.once('listening', r));
    try {
      const run = await runDemo(env);
      expectOneLine(
        run,
        new RegExp(
          `^Once failed to start: port ${env.ONCE_WEB_PORT} \\(web\\) is already in use, perhaps by another Once demo: .*ONCE_WEB_PORT`,
        ),
      );
      expect(run.stdout).toBe('');
    } finally {
      holder.close();
    }
  }, 60_000);

  it('a PostgreSQL data directory that holds something else', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'once-demo-data-'));
    dirs.push(dataDir);
    await writeFile(path.join(dataDir, 'notes.txt'), 'not a cluster');
    const run = await runDemo({ ...(await freePorts()), ONCE_PG_DATA_DIR: dataDir });
    expectOneLine(run, /^Once failed to start: .* is not empty but holds no PostgreSQL cluster: /);
  }, 60_000);

  it('--ha with DATABASE_URL set: one database or the other', async () => {
    const run = await runDemo(
      { ...(await freePorts()), DATABASE_URL: 'postgres://127.0.0.1:1/once' },
      ['--ha'],
    );
    expectOneLine(
      run,
      /^Once failed to start: --ha starts its own PostgreSQL cluster: unset DATABASE_URL/,
    );
  }, 60_000);

  it('--ha with a port of the cluster taken', async () => {
    const base = await findFreePort({ count: 8 });
    const holder = net.createServer().listen(base + 3, '127.0.0.1');
    await new Promise((r) => holder.once('listening', r));
    try {
      const run = await runDemo({ ...(await freePorts()), ONCE_HA_BASE_PORT: String(base) }, [
        '--ha',
      ]);
      expectOneLine(
        run,
        new RegExp(
          `^Once failed to start: port ${base + 3} \\(the PostgreSQL cluster\\) is already in use, .*ONCE_HA_BASE_PORT`,
        ),
      );
    } finally {
      holder.close();
    }
  }, 60_000);

  it('--webs not a whole number of at least 1', async () => {
    const run = await runDemo(await freePorts(), ['--webs', '0']);
    expectOneLine(
      run,
      /^Once failed to start: --webs must be a whole number of at least 1 \(got 0\)$/,
    );
  }, 60_000);
});
