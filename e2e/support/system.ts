import { findFreePort } from '@once/postgres';
import { test } from '@playwright/test';
import {
  type RunningSystem,
  type SystemOptions,
  startSystem,
} from '../../scripts/system/start-system.ts';
import { E2E_NEXT_DIST_DIR } from './global-setup.ts';

/**
 * The whole system for one spec: a throw-away PostgreSQL and every app as a real
 * process on free ports, so specs can kill and restart parts of it.
 */
async function startTestSystem(options: Partial<SystemOptions> = {}): Promise<RunningSystem> {
  const workerCount = options.workerCount ?? 1;
  const ports = await Promise.all([
    findFreePort(),
    findFreePort(),
    // Worker N's health port is base + N - 1: the whole run must be free.
    findFreePort({ count: workerCount }),
  ]);
  return startSystem({
    pgDurability: 'fast',
    webPort: ports[0],
    processorPort: ports[1],
    workerHealthBasePort: ports[2],
    workerCount,
    skipBuild: true,
    nextDistDir: E2E_NEXT_DIST_DIR,
    log: process.env.ONCE_E2E_LOGS ? undefined : () => {},
    ...options,
  });
}

/**
 * One system for the whole spec file: started in `beforeAll`, stopped in `afterAll`. Call it
 * at the top level of a spec; the getter it returns gives the running system inside tests.
 *
 * @example
 * const system = useTestSystem({ env: { WORKER_LEASE_MS: '2000' } });
 * test('...', async ({ page }) => { await signIn(page, system().webUrl); });
 */
export function useTestSystem(options: Partial<SystemOptions> = {}): () => RunningSystem {
  let system: RunningSystem | undefined;
  test.beforeAll(async () => {
    system = await startTestSystem(options);
  });
  test.afterAll(async () => {
    await system?.stop();
  });
  return () => {
    if (!system)
      throw new Error('the test system is not running (useTestSystem starts it in beforeAll)');
    return system;
  };
}
