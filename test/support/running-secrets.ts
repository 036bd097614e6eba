import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { KNOWN_DEMO_SECRETS, MIN_PRODUCTION_SECRET_LENGTH, SECRET_VARIABLES } from '@once/env';
import { expect } from 'vitest';

/** Besides the apps' secrets: the launcher's chaos channel key and the database password. */
const OTHER_SECRET_VARIABLES = ['ONCE_CHAOS_SECRET', 'POSTGRES_PASSWORD'] as const;
const DATABASE_URL_VARIABLES = ['DATABASE_URL', 'PROCESSOR_DATABASE_URL'] as const;

/** The environment a running process really holds (`/proc/<pid>/environ`), else `handed`. */
export function runningEnvironment(
  pid: number | undefined,
  handed: Record<string, string>,
): Record<string, string> {
  if (pid === undefined) return handed;
  try {
    const raw = readFileSync(`/proc/${pid}/environ`, 'utf8');
    return Object.fromEntries(
      raw
        .split('\0')
        .filter(Boolean)
        .map((pair) => {
          const at = pair.indexOf('=');
          return [pair.slice(0, at), pair.slice(at + 1)];
        }),
    );
  } catch {
    return handed;
  }
}

/** One secret a process holds: where it sits and its value. */
export interface HeldSecret {
  process: string;
  variable: string;
  value: string;
}

/** Every secret in a process's environment: the secret variables and database passwords. */
export function secretsHeldBy(process: string, env: Record<string, string>): HeldSecret[] {
  const held: HeldSecret[] = [];
  for (const variable of [...SECRET_VARIABLES, ...OTHER_SECRET_VARIABLES]) {
    const value = env[variable];
    if (value) held.push({ process, variable, value });
  }
  for (const variable of DATABASE_URL_VARIABLES) {
    const url = env[variable];
    const password = url ? decodeURIComponent(new URL(url).password) : '';
    if (password) held.push({ process, variable: `${variable} password`, value: password });
  }
  return held;
}

/** The files of the repository (tracked, and new ones not ignored) containing any of `values`. */
function filesContaining(repoRoot: string, values: readonly string[]): string[] {
  if (values.length === 0) return [];
  const patterns = values.flatMap((value) => ['-e', value]);
  const grep = spawnSync('git', ['grep', '--untracked', '-I', '-F', '-l', ...patterns, '--', '.'], {
    cwd: repoRoot,
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  // git grep: 0 found, 1 nothing found, anything else an error (no git, not a repository).
  if (grep.status === 1) return [];
  if (grep.status !== 0) throw new Error(`git grep failed (${grep.status}): ${grep.stderr}`);
  return grep.stdout.split('\n').filter(Boolean);
}

/**
 * Asserts that every secret in `held` is fresh: each of `variables` is held by some process,
 * no value is a known demo value or short, none is in a file of the repository, and no line
 * of `logs` prints one.
 */
export function expectFreshSecrets(
  repoRoot: string,
  held: HeldSecret[],
  logs: string[],
  variables: readonly string[],
): void {
  const seen = new Set(held.map((h) => h.variable));
  for (const variable of variables)
    expect(seen, `some process holds ${variable}`).toContain(variable);
  for (const { process, variable, value } of held) {
    const where = `${process} ${variable}`;
    expect(KNOWN_DEMO_SECRETS, where).not.toContain(value);
    expect(value.length, where).toBeGreaterThanOrEqual(MIN_PRODUCTION_SECRET_LENGTH);
  }
  const values = [...new Set(held.map((h) => h.value))];
  expect(
    filesContaining(repoRoot, values),
    'files of the repository holding a live secret',
  ).toEqual([]);
  const printed = logs.filter((line) => values.some((value) => line.includes(value)));
  expect(printed, 'log lines printing a secret').toEqual([]);
}
