import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./testing/crash-policy-fixture.ts', import.meta.url));

/** Runs the fixture as a real process (a crash must end it); resolves with its code and output. */
function runFixture(mode: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, mode], {
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('processor crash policy', () => {
  it('survives the rejection postgres.js discards when a new connection fails (#1192)', async () => {
    const { code, output } = await runFixture('discarded-type-query');
    // The driver really produced the unhandled rejection, and the process went on.
    expect(output).toContain(
      'a new connection failed before any query used it (ignored): PostgresError: canceling statement due to statement timeout',
    );
    expect(output).toContain('still running');
    expect(code).toBe(0);
  }, 30_000);

  it('still dies, with the stack, on an unhandled rejection of its own', async () => {
    const { code, output } = await runFixture('bug');
    expect(output).toContain('crashed: unhandled rejection: Error: a bug of ours');
    expect(output).not.toContain('still running');
    expect(code).toBe(1);
  }, 30_000);
});
