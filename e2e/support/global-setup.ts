import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../../scripts/system/start-system.ts';

/** Builds the web app once; every spec then starts it with `skipBuild`. */
export default function globalSetup(): void {
  const result = spawnSync(
    process.execPath,
    [path.join(repoRoot, 'node_modules/next/dist/bin/next'), 'build'],
    {
      cwd: path.join(repoRoot, 'apps/web'),
      env: { ...process.env, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1' },
      stdio: 'inherit',
    },
  );
  if (result.status !== 0) throw new Error(`next build failed (exit ${result.status})`);
}
