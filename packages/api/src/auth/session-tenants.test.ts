import { createDatabaseClient } from '@once/db';
import { tenants } from '@once/db/schema';
import { seedDemoData } from '@once/db/seed';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionTenants } from './session-tenants.ts';

// Against real PostgreSQL: "the database is away" is a lock on `tenants` held by another
// connection (a read of it waits until lock_timeout, 5 s, then fails) or a closed pool.
let database: TestDatabase;
let now = Date.parse('2026-11-26T12:00:00Z');
const clock = { now: () => new Date(now) };
const TENANT_A = { id: 'tenant_a', name: 'Acme Books' };

beforeAll(async () => {
  database = await createTestDatabase('api_session_tenants');
  await seedDemoData(database.client.db);
}, 60_000);
afterAll(async () => {
  await database.drop();
});

/** Runs `body` while another connection holds `tenants` locked against every read. */
async function whileTenantsLocked<T>(body: () => Promise<T>): Promise<T> {
  let result: T | undefined;
  await database.client.sql.begin(async (tx) => {
    await tx`lock table tenants in access exclusive mode`;
    result = await body();
  });
  return result as T;
}

/** Asks until `find` answers `expected` (a background read settles); fails after 100 asks. */
async function eventually(find: () => Promise<unknown>, expected: unknown) {
  for (let ask = 0; ask < 100; ask += 1) {
    if (JSON.stringify(await find()) === JSON.stringify(expected)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(await find()).toEqual(expected);
}

describe('SessionTenants', () => {
  it('a known tenant is answered without the database: a lock on tenants does not hold it', async () => {
    const sessionTenants = new SessionTenants(database.client.db, clock);
    expect(await sessionTenants.find('tenant_a')).toMatchObject(TENANT_A);
    now += 59_000;
    expect(await whileTenantsLocked(() => sessionTenants.find('tenant_a'))).toMatchObject(TENANT_A);
    expect(await sessionTenants.find('tenant_nope')).toBeUndefined();
  });

  it('past its age the last row answers while it is read again; a tenant found gone is refused', async () => {
    await database.client.db.insert(tenants).values({
      id: 'tenant_gone',
      name: 'Gone Ltd',
      apiKeySha256: 'f'.repeat(64),
      processorSecretKey: 'sk_test_gone',
    });
    const sessionTenants = new SessionTenants(database.client.db, clock);
    const gone = { id: 'tenant_gone', name: 'Gone Ltd' };
    expect(await sessionTenants.find('tenant_gone')).toEqual(gone);
    await database.client.db.delete(tenants).where(eq(tenants.id, 'tenant_gone'));
    // Within its age the row is not read again.
    now += 30_000;
    expect(await sessionTenants.find('tenant_gone')).toEqual(gone);
    now += 30_000;
    // Past it: answered from the last row, and the background read finds the tenant gone.
    expect(await sessionTenants.find('tenant_gone')).toEqual(gone);
    await eventually(() => sessionTenants.find('tenant_gone'), undefined);
  });

  it('a read that fails keeps the last row: every request past its age is still answered', async () => {
    const client = createDatabaseClient(database.url, { applicationName: 'test-session-tenants' });
    const sessionTenants = new SessionTenants(client.db, clock);
    expect(await sessionTenants.find('tenant_a')).toMatchObject(TENANT_A);
    await client.close();
    for (let request = 0; request < 3; request += 1) {
      now += 61_000;
      // Every read fails (the pool is closed); none of them costs the request its answer.
      expect(await sessionTenants.find('tenant_a')).toMatchObject(TENANT_A);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // An unknown tenant has no last row: its failed read is the request's error.
    await expect(sessionTenants.find('tenant_b')).rejects.toThrow();
  });
});
