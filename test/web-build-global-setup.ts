import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const webDir = fileURLToPath(new URL('../apps/web', import.meta.url));
/** The test files that serve the build. */
const SERVING_FILES = [
  'test/compose-topology.test.ts',
  'test/postgres-restart.test.ts',
  'scripts/system/chaos-switches.test.ts',
];

/**
 * Vitest runs a file whose path contains one of the command line's filters (all files when
 * there is none): `npx vitest run apps/worker` builds nothing.
 */
function selectedFilesMayNeedIt(): boolean {
  const runAt = process.argv.indexOf('run');
  const filters = process.argv
    .slice(runAt >= 0 ? runAt + 1 : 2)
    .filter((arg) => !arg.startsWith('-') && !arg.includes('='))
    .map((arg) => arg.replace(/^\.\//, ''));
  return (
    filters.length === 0 || filters.some((f) => SERVING_FILES.some((file) => file.includes(f)))
  );
}

/**
 * The production build of the web app (`apps/web/.next`, what the Dockerfile builds) that
 * test/compose-topology and test/postgres-restart serve, made ONCE before any test file runs
 * when it is missing: two files building the same folder at the same time would break both.
 * e2e builds its own `.next-e2e`. Delete `.next` to get a fresh build.
 */
export default function setup(): void {
  if (existsSync(path.join(webDir, '.next', 'BUILD_ID'))) return;
  if (!selectedFilesMayNeedIt()) return;
  console.log('building apps/web/.next once for the tests that serve it (next build) ...');
  const result = spawnSync(
    process.execPath,
    [path.join(webDir, '../../node_modules/next/dist/bin/next'), 'build'],
    {
      cwd: webDir,
      env: { ...process.env, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1' },
      stdio: 'inherit',
    },
  );
  if (result.status !== 0) throw new Error(`next build failed (exit ${result.status})`);
}
