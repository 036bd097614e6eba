import { spawn } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../../scripts/system/start-system.ts';

export interface EntryRun {
  /** Exit code; null when killed after `timeoutMs`. */
  code: number | null;
  /** stdout and stderr, interleaved as they came. */
  output: string;
  stderr: string;
}

/**
 * Runs an app's entry point (`node --import tsx <file>`, from the repository root) with only
 * `env` besides PATH and NODE_OPTIONS (its export condition), until it exits: how an app
 * refuses to start.
 */
export function runEntry(
  file: string,
  env: Record<string, string>,
  options: { args?: string[]; timeoutMs?: number } = {},
): Promise<EntryRun> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(repoRoot, file), ...(options.args ?? [])],
    {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: process.env.NODE_OPTIONS ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    stderr += chunk;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output, stderr });
    }),
  );
}
