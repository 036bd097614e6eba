import { findFreePort } from '@once/postgres';
import type { RestartPolicy } from '../../scripts/system/restart-policy.ts';
import {
  type RunningSystem,
  type SystemOptions,
  startSystem,
} from '../../scripts/system/start-system.ts';
import { TEST_NEXT_DIST_DIR } from '../../scripts/system/web-build.ts';

/** Parts killed on purpose come back within a fraction of a second, at most five times a minute. */
export const TEST_RESTART_POLICY: RestartPolicy = {
  initialDelayMs: 200,
  maxDelayMs: 2_000,
  maxRestarts: 5,
  windowMs: 60_000,
  resetAfterMs: 30_000,
};

/**
 * The demo launcher (`npm run demo`'s `startSystem`) as system tests run it: free ports, one
 * worker, and the tests' web build (test/web-build-global-setup.ts); `options` override.
 */
export async function startTestLauncher(options: SystemOptions = {}): Promise<RunningSystem> {
  return startSystem({
    webPort: await findFreePort(),
    processorPort: await findFreePort(),
    workerHealthBasePort: await findFreePort(),
    workerCount: 1,
    skipBuild: true,
    nextDistDir: TEST_NEXT_DIST_DIR,
    ...options,
  });
}
