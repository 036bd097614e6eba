import { ensureWebBuild, TEST_NEXT_DIST_DIR } from '@once/scripts/web-build';

/** The tests' own Next.js build folder, apart from the demo's `.next`, shared with vitest. */
export const E2E_NEXT_DIST_DIR = TEST_NEXT_DIST_DIR;

/** Builds the web app when its sources changed since the last build; every spec then starts it with `skipBuild`. */
export default function globalSetup(): void {
  ensureWebBuild(E2E_NEXT_DIST_DIR);
}
