import { ensureWebBuild, TEST_NEXT_DIST_DIR } from '../scripts/system/web-build.ts';

/** The test files that serve the production build of the web app. */
const SERVING_FILES = [
  'test/apps-behind-pgbouncer.test.ts',
  'test/compose-topology.test.ts',
  'test/limits-across-webs.test.ts',
  'test/postgres-restart.test.ts',
  'scripts/system/chaos-switches.test.ts',
  'scripts/system/restart.test.ts',
];

/** Whether a file that serves the build is selected (Vitest's filters match path parts). */
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

/** The build those files serve, brought up to date ONCE before any test file runs. */
export default function setup(): void {
  if (selectedFilesMayNeedIt()) ensureWebBuild(TEST_NEXT_DIST_DIR);
}
