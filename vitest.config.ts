import { defineConfig } from 'vitest/config';

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

export default defineConfig({
  // Node's own conditions, plus ours first. Vitest hands them to its workers too. Not Vite's
  // bundler-only `module` condition: @opentelemetry/api 1.9 (the newest its Node 20 SDK
  // accepts) publishes extensionless ESM imports under it, which Node cannot load.
  ssr: { resolve: { conditions: [SOURCE_CONDITION, 'node', 'development|production'] } },
  test: {
    env: { NODE_OPTIONS: process.env.NODE_OPTIONS },
    // Vitest's default on 2 cores is one worker; most files wait on PostgreSQL and child
    // processes, not the CPU, so two run side by side in less wall time.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit+integration',
          // Here, not in the root's `test`: a project that `extends` the root runs the root's
          // global setups a second time (two PostgreSQL clusters and two build checks per run).
          globalSetup: ['./test/postgres-global-setup.ts', './test/web-build-global-setup.ts'],
          include: [
            '{packages,apps}/*/src/**/*.test.ts',
            'packages/idempotency/packaging/**/*.test.ts',
            'bench/src/**/*.test.ts',
            'scripts/**/*.test.ts',
            'test/**/*.test.ts',
          ],
          pool: 'forks',
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
