import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { findFreePort } from '@once/postgres';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm run verify` against a launched `npm run demo`: the embedded PostgreSQL's password is
 * its own (random, per data directory), so verify must learn where the demo's databases are
 * from the demo itself, and say "start the demo" once it has stopped. The same file serves
 * `--ha` (a multi-host URL): the launcher writes whatever URLs its apps were given.
 */
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const demoScript = path.join(repoRoot, 'scripts/demo.ts');
const verifyCli = path.join(repoRoot, 'packages/invariant/src/verify-invariant-cli.ts');

let demo: ChildProcess | undefined;
let dir: string | undefined;
afterAll(async () => {
  if (demo?.exitCode === null) process.kill(-demo.pid!, 'SIGKILL');
  if (dir) await rm(dir, { recursive: true, force: true });
});

function runVerify(env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', verifyCli], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run verify', () => {
  it('reads the databases of the running demo, and once it stopped says to start it', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'once-verify-demo-'));
    // As root, PostgreSQL runs as the postgres OS user, which must reach its data directory.
    await chmod(dir, 0o755);
    const pgPort = String(await findFreePort());
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: '',
      PROCESSOR_DATABASE_URL: '',
      NO_COLOR: '1',
      ONCE_PG_DATA_DIR: path.join(dir, 'postgres'),
      ONCE_DEMO_CONNECTION_FILE: path.join(dir, 'demo-connection.json'),
      ONCE_PG_PORT: pgPort,
      ONCE_WEB_PORT: String(await findFreePort()),
      ONCE_PROCESSOR_PORT: String(await findFreePort()),
      ONCE_WORKER_HEALTH_PORT: String(await findFreePort()),
    };
    // `--dev`: no production build of the web app to make first (next dev compiles on demand).
    demo = spawn(
      process.execPath,
      ['--import', 'tsx', demoScript, '--dev', '--workers', '1', '--no-chaos'],
      { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    let output = '';
    demo.stdout?.on('data', (c) => {
      output += c;
    });
    demo.stderr?.on('data', (c) => {
      output += c;
    });
    await new Promise<void>((resolve, reject) => {
      const started = setInterval(() => {
        if (output.includes('Once is running')) {
          clearInterval(started);
          resolve();
        }
      }, 200);
      demo!.once('exit', (code) => {
        clearInterval(started);
        reject(new Error(`the demo exited ${code}:\n${output}`));
      });
    });

    // With the variables the demo was started with, as a user's shell would still have them.
    const running = await runVerify(env);
    expect(running.stderr).toBe('');
    expect(running.stdout).toMatch(/^OK: 0 payments, 0 ledger charges, 0 violations$/m);
    expect(running.code).toBe(0);

    const stopped = new Promise((resolve) => demo!.once('exit', resolve));
    process.kill(-demo.pid!, 'SIGTERM');
    await stopped;
    expect(existsSync(env.ONCE_DEMO_CONNECTION_FILE!)).toBe(false);
    const after = await runVerify(env);
    expect(after.code).toBe(2);
    expect(after.stderr).toMatch(/^verify: .*Start the demo first \(npm run demo\)/);
  }, 240_000);
});
