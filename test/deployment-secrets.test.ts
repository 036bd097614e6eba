import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DEMO_API_KEY_VARIABLES, KNOWN_DEMO_SECRETS, SECRET_VARIABLES } from '@once/env';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../scripts/system/start-system.ts';
import { readComposeFile } from './support/compose-file.ts';
import { composeSecretsEnv, parseDotEnv } from './support/compose-secrets.ts';

/**
 * No deployment runs with a secret anyone can read in this repository: the deployment files
 * ask for secrets and hold none. The two topologies Once ships are checked running, where
 * they are started anyway: docker-compose.yml in compose-topology.test.ts, `npm run demo`
 * (the launcher) in scripts/system/chaos-switches.test.ts; every secret their processes hold
 * must be fresh (test/support/running-secrets.ts).
 */
const composeFile = path.join(repoRoot, 'docker-compose.yml');
const script = path.join(repoRoot, 'scripts/compose-secrets.sh');
/** What the compose file requires beyond the apps' secrets: the database password. */
const COMPOSE_REQUIRED = [...SECRET_VARIABLES, 'POSTGRES_PASSWORD'];

describe('the deployment contract asks for secrets and writes none', () => {
  it('docker-compose.yml refuses to start without them, naming the one-liner', () => {
    expect(() => readComposeFile(composeFile, {})).toThrow(
      /required variable \w+ is missing a value: set \w+: run sh scripts\/compose-secrets\.sh \(writes \.env\)/,
    );
    const text = readFileSync(composeFile, 'utf8');
    const required = [...text.matchAll(/\$\{(\w+):\?/g)].map((m) => m[1]);
    expect([...new Set(required)].sort()).toEqual([...COMPOSE_REQUIRED].sort());
  });

  it('no file a deployment reads holds a known demo value', () => {
    const deploymentFiles = [
      'docker-compose.yml',
      'Dockerfile',
      '.env.example',
      'docker/postgres-init.sql',
      'scripts/compose-secrets.sh',
      'scripts/demo.ts',
      'scripts/system/start-system.ts',
    ];
    for (const file of deploymentFiles) {
      const text = readFileSync(path.join(repoRoot, file), 'utf8');
      for (const known of KNOWN_DEMO_SECRETS) expect(text, file).not.toContain(known);
    }
  });

  it('compose-secrets.sh writes a fresh value for each, keeps those already there, prints no value', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'once-compose-secrets-'));
    try {
      const file = path.join(dir, '.env');
      writeFileSync(file, 'POSTGRES_PASSWORD=kept-from-the-first-deployment\nSESSION_SECRET=\n');
      const run = spawnSync('sh', [script, file], { encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      const env = parseDotEnv(readFileSync(file, 'utf8'));
      expect(Object.keys(env).sort()).toEqual([...COMPOSE_REQUIRED].sort());
      expect(env.POSTGRES_PASSWORD).toBe('kept-from-the-first-deployment');
      for (const name of SECRET_VARIABLES) {
        expect(env[name]).toMatch(/^(whsec_|once_live_)?[0-9a-f]{64}$/);
      }
      for (const name of DEMO_API_KEY_VARIABLES) expect(env[name]).toMatch(/^once_live_/);
      for (const value of Object.values(env)) expect(run.stdout).not.toContain(value);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const again = spawnSync('sh', [script, file], { encoding: 'utf8' });
      expect(again.status).toBe(0);
      expect(parseDotEnv(readFileSync(file, 'utf8'))).toEqual(env);
      expect(composeSecretsEnv(repoRoot).SESSION_SECRET).not.toBe(env.SESSION_SECRET);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
