import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['./test/postgres-global-setup.ts', './test/web-build-global-setup.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit+integration',
          include: [
            '{packages,apps}/*/src/**/*.test.ts',
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
