import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { isDiscardedTypeQuery } from './test/support/discarded-type-query.ts';

/**
 * Workspace packages export their TypeScript sources under this condition and compiled
 * `dist/` files to everyone else (see packages/idempotency/package.json): tests run on the
 * sources, with no build step.
 */
const SOURCE_CONDITION = '@once/source';
/**
 * Node processes that tests and global setups start (`node --import tsx ...`) inherit this
 * environment, so they resolve the sources too, however Vitest itself was started.
 */
const inherited = process.env.NODE_OPTIONS ?? '';
process.env.NODE_OPTIONS = inherited.includes(SOURCE_CONDITION)
  ? inherited
  : `${inherited} --conditions=${SOURCE_CONDITION}`.trim();

/**
 * Test files that change what the whole process shares (module mocks, stubbed env, fake
 * timers, console spies, OpenTelemetry's globals, warn-once flags), themselves or through a
 * helper they import: each runs in a fresh process of its own. Every other file shares its
 * worker's loaded modules with the files before it, which saves importing the same sources
 * again for each of ~190 files (the 113 files of packages/ and apps/web: 225 -> 148 CPU
 * seconds). test/vitest-isolation.test.ts finds the files that belong here.
 */
export const ISOLATED_FILES = [
  'apps/processor/src/maintenance/periodic-sweep.test.ts',
  'apps/web/src/server/graphql-api.test.ts',
  'apps/web/src/server/merchants.test.ts',
  'apps/web/src/server/processor-webhook.test.ts',
  'packages/idempotency/src/adapters/fetch/fetch-idempotency.test.ts',
  'packages/idempotency/src/adapters/fetch/on-answered.test.ts',
  'packages/idempotency/src/adapters/graphql/on-answered.test.ts',
  'packages/idempotency/src/adapters/trpc/on-answered.test.ts',
  'packages/idempotency/src/adapters/trpc/standalone.test.ts',
  'packages/idempotency/src/core/heartbeat.test.ts',
  'packages/idempotency/src/core/wait-for-result.test.ts',
  'packages/idempotency/src/core/with-timeout.test.ts',
  'packages/idempotency/src/observability/opentelemetry.test.ts',
  'packages/idempotency/src/store/drizzle/setup-checks.test.ts',
  'packages/postgres/src/embedded-postgres-startup.test.ts',
  'scripts/ha/sync-failover.test.ts',
  'test/production-secrets.test.ts',
  'test/vitest-isolation.test.ts',
  'test/webhook-clock-skew.test.ts',
  'test/webhook-secret-forgery.test.ts',
];

const TEST_FILES = [
  '{packages,apps}/*/src/**/*.test.ts',
  'packages/idempotency/packaging/**/*.test.ts',
  'bench/src/**/*.test.ts',
  'scripts/**/*.test.ts',
  'test/**/*.test.ts',
];

/**
 * What both projects share. Not through `extends: true`: a project that extends the root
 * runs the root's global setups a second time (two PostgreSQL clusters and two build checks).
 */
const project = (
  name: string,
  files: { include: string[]; exclude?: string[] },
  isolate: boolean,
): TestProjectInlineConfiguration => ({
  // Node's own conditions, plus ours first. Vitest hands them to its workers too. Not Vite's
  // bundler-only `module` condition: @opentelemetry/api 1.9 (the newest its Node 20 SDK
  // accepts) publishes extensionless ESM imports under it, which Node cannot load.
  ssr: { resolve: { conditions: [SOURCE_CONDITION, 'node', 'development|production'] } },
  test: {
    name,
    ...files,
    isolate,
    env: { NODE_OPTIONS: process.env.NODE_OPTIONS ?? '' },
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

export default defineConfig({
  test: {
    // Vitest's default on 2 cores is one worker; most files wait on PostgreSQL and child
    // processes, not the CPU, so two run side by side in less wall time.
    maxWorkers: 2,
    // The root's, so they run once per run whichever projects' files were picked.
    globalSetup: ['./test/postgres-global-setup.ts', './test/web-build-global-setup.ts'],
    // Not an error of the code under test: returning false keeps it out of the run's errors.
    onUnhandledError: (error) => !isDiscardedTypeQuery(error),
    projects: [
      project(
        'unit+integration',
        { include: TEST_FILES, exclude: [...configDefaults.exclude, ...ISOLATED_FILES] },
        false,
      ),
      project('isolated', { include: ISOLATED_FILES }, true),
    ],
  },
});
