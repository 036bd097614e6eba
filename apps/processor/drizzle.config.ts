import { defineConfig } from 'drizzle-kit';

// Run from the repository root:
// `npx drizzle-kit generate --config apps/processor/drizzle.config.ts`
export default defineConfig({
  dialect: 'postgresql',
  schema: './apps/processor/src/db/schema/index.ts',
  out: './apps/processor/drizzle',
  strict: true,
});
