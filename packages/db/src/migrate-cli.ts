// `npm run db:migrate [-- --seed-demo]`: applies the migrations to DATABASE_URL and, with
// --seed-demo, writes the two demo merchants, their catalogues and API keys (upserts: safe to
// repeat). docker-compose runs it as its one-shot `migrate` step before any app starts. The
// merchants' API keys come from ONCE_DEMO_API_KEY_TENANT_A / _B (compose: .env, written by
// scripts/compose-secrets.sh); unset, the public test keys, refused with NODE_ENV=production.
import { parseArgs } from 'node:util';
import { createDatabaseClient, requireDatabaseUrl } from './client.ts';
import { runMigrations } from './migrate.ts';
import { demoTenantsWithApiKeys, publicDemoKeyProblem, seedDemoData } from './seed.ts';

const { values } = parseArgs({ options: { 'seed-demo': { type: 'boolean', default: false } } });
try {
  const databaseUrl = requireDatabaseUrl();
  const seed = values['seed-demo'];
  const tenants = demoTenantsWithApiKeys({
    tenant_a: process.env.ONCE_DEMO_API_KEY_TENANT_A,
    tenant_b: process.env.ONCE_DEMO_API_KEY_TENANT_B,
  });
  // Before touching the database: a production seed never opens with a public key.
  if (seed && process.env.NODE_ENV === 'production') {
    const problem = publicDemoKeyProblem(tenants, 'run migrate without --seed-demo');
    if (problem) throw new Error(problem);
  }
  await runMigrations(databaseUrl);
  console.log('migrations applied');
  if (seed) {
    const client = createDatabaseClient(databaseUrl, { applicationName: 'once-migrate' });
    try {
      await seedDemoData(client.db, tenants);
    } finally {
      await client.close();
    }
    // Never prints a key: one given by the environment is a secret.
    console.log(
      'demo data seeded (tenant_a, tenant_b; API keys from ONCE_DEMO_API_KEY_TENANT_A / _B, the public test keys where unset)',
    );
  }
} catch (error) {
  // One line saying what failed (DATABASE_URL unset or unreachable), not a stack trace.
  console.error(`migrate: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}
