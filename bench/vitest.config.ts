import { defineConfig } from 'vitest/config';

// The bench's own unit tests (pure helpers: stats, arguments, tables); no database needed.
// Run: npx vitest run --config bench/vitest.config.ts
export default defineConfig({
  test: { include: ['bench/src/**/*.test.ts'], root: '.' },
});
