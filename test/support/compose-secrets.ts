import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The secrets a deployment's `.env` would hold, made by the documented one-liner itself
 * (`sh scripts/compose-secrets.sh`) into a throw-away file: fresh per call.
 */
export function composeSecretsEnv(repoRoot: string): Record<string, string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'once-compose-env-'));
  const file = path.join(dir, '.env');
  try {
    const run = spawnSync('sh', [path.join(repoRoot, 'scripts/compose-secrets.sh'), file], {
      encoding: 'utf8',
    });
    if (run.status !== 0) {
      throw new Error(`compose-secrets.sh exited ${run.status}: ${run.stderr}${run.stdout}`);
    }
    return parseDotEnv(readFileSync(file, 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `NAME=value` lines (compose's `.env`, no quoting needed for hex values); `#` comments. */
export function parseDotEnv(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (match) env[match[1]!] = match[2]!.trim();
  }
  return env;
}
