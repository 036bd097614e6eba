// `npm run db:migrate [-- --seed-demo]`: applies the migrations to DATABASE_URL and, with
// --seed-demo, writes the two demo merchants, their catalogues and API keys (upserts: safe to
// repeat). docker-compose runs it as its one-shot `migrate` step before any app starts.
import { parseArgs } from 'node:util';
import { createDatabaseClient, requireDatabaseUrl } from './client.ts';
import { runMigrations } from './migrate.ts';
import { seedDemoData } from './seed.ts';

const { values } = parseArgs({ options: { 'seed-demo': { type: 'boolean', default: false } } });
try {
  const databaseUrl = requireDatabaseUrl();
  await runMigrations(databaseUrl);
  console.log('migrations applied');
  if (values['seed-demo']) {
    const client = createDatabaseClient(databaseUrl, { applicationName: 'once-migrate' });
    try {
      await seedDemoData(client.db);
    } finally {
      await client.close();
    }
    console.log('demo data seeded (tenant_a: once_test_tenant_a, tenant_b: once_test_tenant_b)');
  }
} catch (error) {
  // One line saying what failed (DATABASE_URL unset or unreachable), not a stack trace.
  console.error(`migrate: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}
