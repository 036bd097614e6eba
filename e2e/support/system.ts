import { findFreePort } from '@once/postgres';
import { type RunningSystem, type SystemOptions, startSystem } from '@once/scripts/start-system';
import { test as base, expect } from '@playwright/test';
import { E2E_NEXT_DIST_DIR } from './global-setup.ts';

/**
 * The whole system for one spec: a throw-away PostgreSQL and every app as a real
 * process on free ports, so specs can kill and restart parts of it.
 */
async function startTestSystem(options: Partial<SystemOptions> = {}): Promise<RunningSystem> {
  const lines: string[] = [];
  const keep = (line: string) => {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the launcher colours its prefixes
    lines.push(line.replace(/\u001b\[[0-9;]*m/g, ''));
    if (lines.length > KEPT_LOG_LINES) lines.splice(0, lines.length - KEPT_LOG_LINES);
    if (process.env.ONCE_E2E_LOGS) console.log(line);
  };
  const workerCount = options.workerCount ?? 1;
  const ports = await Promise.all([
    findFreePort(),
    findFreePort(),
    // Worker N's health port is base + N - 1: the whole run must be free.
    findFreePort({ count: workerCount }),
  ]);
  const system = await startSystem({
    pgDurability: 'fast',
    webPort: ports[0],
    processorPort: ports[1],
    workerHealthBasePort: ports[2],
    workerCount,
    skipBuild: true,
    nextDistDir: E2E_NEXT_DIST_DIR,
    log: keep,
    ...options,
  });
  recentLines.set(system, lines);
  return system;
}

/** How many of a test system's last launcher lines are kept for a failing test's message. */
const KEPT_LOG_LINES = 400;
const recentLines = new WeakMap<RunningSystem, string[]>();

/**
 * A part's last lines as the launcher printed them (`postgres  | ...`), joined on one line
 * for an assertion's message: CI keeps the message and little else of a failing run.
 */
export function partLog(system: RunningSystem, part: string, count = 8): string {
  const said = (recentLines.get(system) ?? []).filter((line) => line.startsWith(`${part} `));
  return `${part}'s last lines: ${said.slice(-count).join(' | ') || '(none)'}`;
}

/**
 * One system for the whole spec file: started in `beforeAll`, stopped in `afterAll`. Call it
 * at the top level of a spec; the getter it returns gives the running system inside tests.
 */
export function useTestSystem(options: Partial<SystemOptions> = {}): () => RunningSystem {
  let system: RunningSystem | undefined;
  base.beforeAll(async () => {
    system = await startTestSystem(options);
  });
  base.afterAll(async () => {
    await system?.stop();
  });
  return () => {
    if (!system)
      throw new Error('the test system is not running (useTestSystem starts it in beforeAll)');
    return system;
  };
}

/**
 * Playwright's `test` with the system every spec of this worker shares: started with the
 * default options before the first spec that uses it, stopped after the worker's last spec
 * (Playwright starts a new worker after a failure, so a spec that broke it never hands it on).
 */
export const test = base.extend<object, { sharedSystem: RunningSystem }>({
  sharedSystem: [
    // biome-ignore lint/correctness/noEmptyPattern: Playwright reads a fixture's dependencies from this pattern.
    async ({}, use) => {
      const system = await startTestSystem();
      try {
        await use(system);
      } finally {
        await system.stop();
      }
    },
    { scope: 'worker', timeout: 180_000 },
  ],
});
export { expect };

/**
 * The shared system for a spec whose tests use {@link test} from this module: no start of
 * its own. A spec may kill and restart parts, and must leave every part up again: checked
 * after its last test, so the next spec gets the system as the first one did. A spec that
 * needs other options (env, chaos, workers) takes its own with {@link useTestSystem}.
 */
export function useSharedSystem(): () => RunningSystem {
  let system: RunningSystem | undefined;
  let parts: string[] = [];
  test.beforeAll(async ({ sharedSystem }) => {
    system = sharedSystem;
    parts = system.supervisor.status().map((p) => `${p.name}: up`);
  });
  test.afterAll(async () => {
    if (!system) return;
    const now = system.supervisor.status().map((p) => `${p.name}: ${p.state}`);
    expect(now.sort(), 'the spec leaves every part of the shared system up').toEqual(parts.sort());
  });
  return () => {
    if (!system) throw new Error('the shared system is not running (useSharedSystem)');
    return system;
  };
}
