import { spawn } from 'node:child_process';
import path from 'node:path';
import { generateSecrets, KNOWN_DEMO_SECRETS } from '@once/env';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../scripts/system/start-system.ts';

/**
 * A production start (NODE_ENV=production, as the image and the launcher set it) of each app
 * that holds a secret refuses a value written in the repository, or a short one, in ONE line
 * saying what to do, before it listens or touches a database (nothing listens at the URLs).
 */
const APPS = {
  web: 'apps/web/src/process/main.ts',
  processor: 'apps/processor/src/main.ts',
  worker: 'apps/worker/src/main.ts',
} as const;

/** What every app needs to get as far as its environment check: nothing answers there. */
const BASE_ENV = {
  NODE_ENV: 'production',
  HOST: '127.0.0.1',
  PORT: '0',
  WORKER_HEALTH_PORT: '0',
  DATABASE_URL: 'postgres://once:password@127.0.0.1:9/once',
  PROCESSOR_DATABASE_URL: 'postgres://once:password@127.0.0.1:9/once_processor',
  PROCESSOR_URL: 'http://127.0.0.1:9',
};

async function start(app: keyof typeof APPS, env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, APPS[app])], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, NODE_OPTIONS: process.env.NODE_OPTIONS, ...BASE_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return { code, lines: output.trim().split('\n') };
}

describe('a production start refuses secrets written in the repository', () => {
  it.each([
    ['web', 'SESSION_SECRET', 'once-demo-session-secret'],
    ['processor', 'PROCESSOR_WEBHOOK_SECRET', 'whsec_once_demo'],
    ['processor', 'PROCESSOR_ADMIN_TOKEN', 'once-admin'],
    ['worker', 'PROCESSOR_ADMIN_TOKEN', 'once-admin'],
  ] as const)(
    '%s with %s=<the old demo value>: exit 1, one line',
    async (app, name, value) => {
      expect(KNOWN_DEMO_SECRETS).toContain(value);
      const { code, lines } = await start(app, { ...generateSecrets(), [name]: value });
      expect(code).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^${app}: [a-z -]+: ${name} is a demo value written in the repository, refused with NODE_ENV=production: generate one with \`openssl rand -hex 32\``,
        ),
      );
      expect(lines[0]).not.toContain(value);
    },
    60_000,
  );

  it('refuses a short secret, and names how long it must be', async () => {
    const { code, lines } = await start('web', {
      ...generateSecrets(),
      SESSION_SECRET: 'sixteen-chars-ok',
    });
    expect(code).toBe(1);
    expect(lines).toEqual([
      expect.stringMatching(
        /^web: cannot start: SESSION_SECRET is 16 characters, too short for NODE_ENV=production \(at least 32\)/,
      ),
    ]);
  }, 60_000);
});
