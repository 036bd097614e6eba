import { existsSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../scripts/system/start-system.ts';

const buildId = path.join(repoRoot, 'apps/web/.next/BUILD_ID');

/**
 * True once a production build of apps/web exists. Other suites (e2e) rebuild it while this
 * one starts; `next build` deletes BUILD_ID first, so a missing file usually means "being
 * built right now": wait for it rather than start a second build into the same folder.
 * False after `timeoutMs`: the caller builds (startSystem without `skipBuild`).
 */
export async function waitForWebBuild(timeoutMs = 90_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(buildId)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  // A build that just wrote BUILD_ID may still be writing the last manifests.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  return true;
}
