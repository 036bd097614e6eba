import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../scripts/system/start-system.ts';

/** Runs an app's entry point until it exits; its exit code and what it printed on stderr. */
function runEntry(file: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, file)], {
      cwd: repoRoot,
      // NODE_OPTIONS carries the export condition that resolves workspace packages to their
      // sources (set by the repository's .npmrc for every npm script).
      env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: process.env.NODE_OPTIONS ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('exit', (code) => resolve({ code, stderr }));
  });
}

describe('a bad bind address stops an app at start with one line', () => {
  it('processor: HOST=processor (a name) is refused before anything else', async () => {
    const { code, stderr } = await runEntry('apps/processor/src/main.ts', {
      HOST: 'processor',
      PROCESSOR_DATABASE_URL: 'postgres://127.0.0.1:1/unused',
    });
    expect(code).toBe(1);
    expect(stderr.trim()).toMatch(
      /^processor: cannot start: HOST must be an IP address .*"processor"$/,
    );
  });

  it('web: HOST=web is refused before Next is loaded', async () => {
    const { code, stderr } = await runEntry('apps/web/src/process/main.ts', { HOST: 'web' });
    expect(code).toBe(1);
    expect(stderr.trim()).toMatch(/^web: cannot start: HOST must be an IP address .*"web"$/);
  });
});
