import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import { BROKEN_STORES } from '../../testing/broken-stores.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { storeContractCases } from './store-contract.ts';

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('store_contract', 20);
  // Open every connection now: the concurrency case races reservations, not connection setup.
  await Promise.all(Array.from({ length: 20 }, () => t.sql`select pg_sleep(0.05)`));
});
afterAll(async () => {
  await t?.drop();
});

describe('the Drizzle store keeps the store contract (real PostgreSQL)', () => {
  for (const c of storeContractCases(() => createDrizzleStore(t.db))) it(c.name, c.run);
});

describe('the Drizzle store keeps the store contract with its answers encrypted', () => {
  const encryption = { currentKeyId: 'k1', keys: { k1: randomBytes(32) } };
  for (const c of storeContractCases(() => createDrizzleStore(t.db, { encryption })))
    it(c.name, c.run);
});

/** The names of the contract cases a store fails. */
async function failedCases(name: keyof typeof BROKEN_STORES): Promise<string[]> {
  const failed: string[] = [];
  for (const c of storeContractCases(() => BROKEN_STORES[name]!(createDrizzleStore(t.db)))) {
    await c.run().catch(() => failed.push(c.name));
  }
  return failed;
}

describe('the store contract rejects broken stores', () => {
  it('a check-then-insert reservation fails the concurrency case', async () => {
    expect(await failedCases('checkThenInsertReserve')).toContain(
      'reserve: concurrent reservations of one key acquire it exactly once',
    );
  });

  it('keys that ignore the tenant fail the tenant cases (and only them)', async () => {
    expect(await failedCases('tenantBlindKeys')).toEqual([
      'reserve: keys are scoped by tenant',
      // The completer's claim names the key it took over by a tenant the rows do not have.
      'claimResumable (optional): only an expired lease with a committed phase under resume is claimed, as a takeover; its old holder is fenced off',
    ]);
  });

  it('a complete that ignores the owner token fails the fencing cases', async () => {
    expect(await failedCases('completeIgnoresOwnerToken')).toEqual(
      expect.arrayContaining([
        'holder writes: another owner token changes nothing and gets lost',
        'reserve: an expired lease of the same request is taken over, and its old holder is fenced off',
      ]),
    );
  });

  it('leases that never expire fail the takeover cases', async () => {
    expect(await failedCases('leasesNeverExpire')).toEqual(
      expect.arrayContaining([
        'reserve: an expired lease of the same request is taken over, and its old holder is fenced off',
      ]),
    );
  });
});
