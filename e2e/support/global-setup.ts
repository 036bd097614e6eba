import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../../scripts/system/start-system.ts';

/** The tests' own Next.js build folder, apart from the demo's `.next`. */
export const E2E_NEXT_DIST_DIR = '.next-e2e';

/** Builds the web app once; every spec then starts it with `skipBuild`. */
export default function globalSetup(): void {
  const result = spawnSync(
    process.execPath,
    [path.join(repoRoot, 'node_modules/next/dist/bin/next'), 'build'],
    {
      cwd: path.join(repoRoot, 'apps/web'),
      env: {
        ...process.env,
        NODE_ENV: 'production',
        NEXT_TELEMETRY_DISABLED: '1',
        ONCE_NEXT_DIST_DIR: E2E_NEXT_DIST_DIR,
      },
      stdio: 'inherit',
    },
  );
  if (result.status !== 0) throw new Error(`next build failed (exit ${result.status})`);
}
