import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';

/** The tenant the outbox tests' jobs belong to (jobs reference a tenant, nothing else). */
export const OUTBOX_TEST_TENANT = 'tenant_outbox';

/** A fresh migrated database with the one tenant outbox jobs need, for this folder's tests. */
export async function createOutboxTestDatabase(label: string): Promise<TestDatabase> {
  const database = await createTestDatabase(label);
  await database.client.sql`
    insert into tenants (id, name, api_key_sha256, processor_secret_key)
    values (${OUTBOX_TEST_TENANT}, 'outbox', 'sha_outbox', 'sk_outbox')`;
  return database;
}
