import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../packages/db/src/embedded-postgres.ts';

/**
 * One throw-away PostgreSQL cluster for the whole test run. Tests never share a
 * database: each file creates its own (see `createTestDatabase`), so files run in
 * parallel without seeing each other's rows. With DATABASE_URL set, that server is
 * used instead, and test databases are created on it.
 */
export default async function setup(project: TestProject) {
  if (process.env.DATABASE_URL) {
    process.env.ONCE_TEST_ADMIN_URL = process.env.DATABASE_URL;
    project.provide('postgresAdminUrl', process.env.DATABASE_URL);
    return;
  }
  const pg = await startEmbeddedPostgres({ durability: 'fast' });
  // Forked test workers inherit the environment; `provide` serves threads.
  process.env.ONCE_TEST_ADMIN_URL = pg.adminUrl;
  process.env.ONCE_TEST_PG_DATA_DIR = pg.dataDir;
  project.provide('postgresAdminUrl', pg.adminUrl);
  return async () => {
    await pg.stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresAdminUrl: string;
  }
}
