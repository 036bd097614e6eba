import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const webDir = fileURLToPath(new URL('../..', import.meta.url));
const main = fileURLToPath(new URL('./main.ts', import.meta.url));

/** Starts the production web process with `env` only; resolves when it exits (or is killed). */
function startWeb(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    // The workspaces' sources, as `npm run` resolves them (.npmrc).
    const args = ['--conditions=@once/source', '--import', 'tsx', main];
    const child = spawn(process.execPath, args, {
      cwd: webDir,
      // As the launcher starts it: no NODE_ENV (Next sets it once it loads).
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...env,
      } as unknown as NodeJS.ProcessEnv,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    // A process that started serving instead of refusing: the test fails on its exit code.
    const deadline = setTimeout(() => child.kill('SIGKILL'), 25_000);
    child.on('exit', (code) => {
      clearTimeout(deadline);
      resolve({ code, stderr });
    });
  });
}

describe('the web process (main.ts)', () => {
  it('refuses a runtime environment at start: one line on stderr naming the variable, exit 1', async () => {
    const { code, stderr } = await startWeb({
      HOST: '127.0.0.1',
      PORT: '0',
      // Never reached: the refusal comes first.
      DATABASE_URL: 'postgres://once@127.0.0.1:9/once',
    });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^web: cannot start: SESSION_SECRET is not set/),
    ]);
  }, 30_000);

  it('refuses an unknown DATABASE_POOL_MODE in one line, exit 1', async () => {
    const { code, stderr } = await startWeb({
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: 'postgres://once@127.0.0.1:9/once',
      DATABASE_POOL_MODE: 'Transaction',
    });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([
      'web: cannot start: DATABASE_POOL_MODE must be transaction (the URL is a transaction-mode pooler such as PgBouncer) or session, got "Transaction"',
    ]);
  }, 30_000);
});
