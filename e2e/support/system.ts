import { findFreePort } from '../../packages/db/src/postgres-admin.ts';
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
export async function startTestSystem(
  options: Partial<SystemOptions> = {},
): Promise<RunningSystem> {
  const ports = await Promise.all([findFreePort(), findFreePort(), findFreePort()]);
  return startSystem({
    pgDurability: 'fast',
    webPort: ports[0],
    processorPort: ports[1],
    workerHealthBasePort: ports[2],
    workerCount: 1,
    skipBuild: true,
    nextDistDir: E2E_NEXT_DIST_DIR,
    log: process.env.ONCE_E2E_LOGS ? undefined : () => {},
    ...options,
  });
}
