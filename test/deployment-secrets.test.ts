import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  DEMO_API_KEY_VARIABLES,
  KNOWN_DEMO_SECRETS,
  MIN_PRODUCTION_SECRET_LENGTH,
  SECRET_VARIABLES,
} from '@once/env';
import { findFreePort } from '@once/postgres';
import { describe, expect, it } from 'vitest';
import { repoRoot, startSystem } from '../scripts/system/start-system.ts';
import { TEST_NEXT_DIST_DIR } from '../scripts/system/web-build.ts';
import { readComposeFile } from './support/compose-file.ts';
import { composeSecretsEnv, parseDotEnv } from './support/compose-secrets.ts';
import { loopbackAliasesAvailable, startComposeTopology } from './support/compose-topology.ts';
import {
  filesContaining,
  type HeldSecret,
  runningEnvironment,
  secretsHeldBy,
} from './support/running-secrets.ts';

/**
 * No deployment runs with a secret anyone can read in this repository. The two topologies
 * Once ships, `npm run demo` (the launcher) and docker-compose.yml, are started for real;
 * every secret their processes hold (read from /proc/<pid>/environ: what they really run
 * with) must be fresh: not a known demo value, long, not in any file of the repository
 * (one `git grep -F` for all of them), and not in the logs.
 */
const composeFile = path.join(repoRoot, 'docker-compose.yml');
const script = path.join(repoRoot, 'scripts/compose-secrets.sh');
/** What the compose file requires beyond the apps' secrets: the database password. */
const COMPOSE_REQUIRED = [...SECRET_VARIABLES, 'POSTGRES_PASSWORD'];
const isDemoApiKey = (name: string) => (DEMO_API_KEY_VARIABLES as readonly string[]).includes(name);
/**
 * What the launcher makes per run: every secret but the demo merchants' API keys (`npm run
 * demo`, on loopback, keeps the public test keys; compose is given its own).
 */
const LAUNCHER_SECRETS = SECRET_VARIABLES.filter((name) => !isDemoApiKey(name));
/** Linux answers on all of 127.0.0.0/8; elsewhere the compose half is skipped (see compose-topology.test.ts). */
const aliases = await loopbackAliasesAvailable();

function expectFresh(held: HeldSecret[], logs: string[], variables: readonly string[]): void {
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

describe('the topologies run with fresh secrets, none written in the repository', () => {
  it('npm run demo: the launcher hands every part secrets made for this run', async () => {
    const logs: string[] = [];
    const system = await startSystem({
      pgDurability: 'fast',
      webPort: await findFreePort(),
      processorPort: await findFreePort(),
      workerHealthBasePort: await findFreePort(),
      workerCount: 1,
      skipBuild: true,
      nextDistDir: TEST_NEXT_DIST_DIR,
      chaos: true,
      log: (line) => logs.push(line),
    });
    try {
      const held = system.supervisor
        .status()
        .filter((part) => part.name !== 'postgres')
        .flatMap((part) =>
          secretsHeldBy(part.name, runningEnvironment(part.pid, system.envFor(part.name))),
        );
      expectFresh(held, logs, [...LAUNCHER_SECRETS, 'ONCE_CHAOS_SECRET', 'DATABASE_URL password']);
      expect(held.filter((h) => isDemoApiKey(h.variable))).toEqual([]);
      // One set per run, shared by the parts that must agree (the webhook signer and checker).
      const web = system.envFor('web');
      const processor = system.envFor('processor');
      expect(web.PROCESSOR_WEBHOOK_SECRET).toBe(processor.PROCESSOR_WEBHOOK_SECRET);
      expect(web.PROCESSOR_ADMIN_TOKEN).toBe(processor.PROCESSOR_ADMIN_TOKEN);
    } finally {
      await system.stop();
    }
  }, 240_000);

  it.skipIf(!aliases)(
    'docker-compose.yml: every service holds only the secrets .env gave it, made per deployment',
    async () => {
      const logs: string[] = [];
      const topology = await startComposeTopology({
        repoRoot,
        projectEnv: composeSecretsEnv(repoRoot),
        hostEnv: { ONCE_NEXT_DIST_DIR: TEST_NEXT_DIST_DIR },
        log: (line) => logs.push(line),
        readyTimeoutMs: 60_000,
      });
      try {
        const running = topology.instances.filter((i) => i.child.exitCode === null);
        const held = running.flatMap((i) =>
          secretsHeldBy(i.name, runningEnvironment(i.child.pid, i.env)),
        );
        expectFresh(held, logs, [...SECRET_VARIABLES, 'DATABASE_URL password']);
        // Least privilege: the workers hold no secret but their database password.
        const workerSecrets = held.filter((h) => h.process.startsWith('worker'));
        expect(new Set(workerSecrets.map((h) => h.variable))).toEqual(
          new Set(['DATABASE_URL password', 'PROCESSOR_DATABASE_URL password']),
        );
        // The merchants' API keys: the seed's (migrate, done by now, and web) only.
        const apiKeyHolders = held.filter((h) => isDemoApiKey(h.variable)).map((h) => h.process);
        expect(new Set(apiKeyHolders)).toEqual(new Set(['web']));
      } finally {
        await topology.stop();
      }
    },
    240_000,
  );
});
