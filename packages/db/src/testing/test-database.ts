import { createEmptyTestDatabase } from '@once/postgres/testing';
import { createDatabaseClient, type DatabaseClient } from '../client.ts';
import { runMigrations } from '../migrate.ts';

export { testAdminUrl, withDatabase } from '@once/postgres/testing';

export interface TestDatabase {
  /** URL of the new, migrated database. */
  url: string;
  /** URL of the cluster's maintenance database (for pg_terminate_backend and the like). */
  adminUrl: string;
  client: DatabaseClient;
  drop(): Promise<void>;
}

/**
 * A fresh database with every app migration applied, dropped again by `drop()`.
 *
 * @example
 * const database = await createTestDatabase('checkout');
 * await database.client.db.select().from(schema.payments);
 * await database.drop();
 */
export async function createTestDatabase(label = 'test'): Promise<TestDatabase> {
  const empty = await createEmptyTestDatabase(label);
  await runMigrations(empty.url);
  const client = createDatabaseClient(empty.url, { applicationName: `test-${label}` });
  return {
    url: empty.url,
    adminUrl: empty.adminUrl,
    client,
    async drop() {
      await client.close();
      await empty.drop();
    },
  };
}
