import assert from 'node:assert/strict';
import { sql as raw } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { isIdempotencyError } from '../../core/errors.ts';
import { INITIAL_RECOVERY_POINT } from '../../core/types.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { storeContractCases } from './store-contract.ts';

/**
 * The store contract at each isolation level PostgreSQL has, set as the connections' default
 * (`default_transaction_isolation`, as a role or database setting would): every statement the
 * store runs alone and every transaction it opens runs at that level. Under REPEATABLE READ and
 * SERIALIZABLE a statement that meets a row committed after its snapshot fails with 40001
 * instead of waiting and reading the newer row as READ COMMITTED does: the store runs its own
 * statements again, and answers a duplicate's atomic insert as a conflict.
 */
const LEVELS = ['read committed', 'repeatable read', 'serializable'] as const;

for (const level of LEVELS) {
  describe(`under ${level}`, () => {
    let t: IdempotencyTestDatabase;
    let client: postgres.Sql;
    beforeAll(async () => {
      t = await createIdempotencyTestDatabase(`contract_${level}`, 1);
      client = postgres(t.url, {
        max: 20,
        onnotice: () => {},
        connection: { default_transaction_isolation: level },
      });
      // Open every connection now: the concurrency cases race reservations, not connection setup.
      await Promise.all(Array.from({ length: 20 }, () => client`select pg_sleep(0.05)`));
    });
    afterAll(async () => {
      await client?.end({ timeout: 1 });
      await t?.drop();
    });

    it('every connection of the store runs at that level', async () => {
      const db = drizzle(client);
      const levels = await Promise.all(
        Array.from({ length: 20 }, () =>
          db.transaction((tx) =>
            tx.execute(raw`select current_setting('transaction_isolation') as l`),
          ),
        ),
      );
      expect(new Set(levels.map((rows) => (rows as unknown as { l: string }[])[0]?.l))).toEqual(
        new Set([level]),
      );
    });

    describe('the Drizzle store keeps the store contract', () => {
      for (const c of storeContractCases(() => createDrizzleStore(drizzle(client)))) {
        it(c.name, c.run);
      }
    });

    it('a burst of 30 new keys from one principal against a cap of 3 acquires 3, refuses 27', async () => {
      const store = createDrizzleStore(drizzle(client));
      const run = globalThis.crypto.randomUUID().slice(0, 8);
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          store
            .reserve({
              tenantId: `burst-${run}`,
              operation: 'burst.pay',
              key: `burst-${run}-${i}`,
              principal: 'session-1',
              fingerprint: 'f',
              ownerToken: globalThis.crypto.randomUUID(),
              leaseMs: 60_000,
              ttlMs: 60_000,
              onExpiredLease: 'resume',
              rateLimit: { maxNewKeys: 3, windowMs: 7 * 24 * 60 * 60_000 },
            })
            .then(
              (r) => r.kind,
              (error: Error) => `threw: ${error.message}`,
            ),
        ),
      );
      const count = (kind: string) => results.filter((r) => r === kind).length;
      expect(
        { acquired: count('acquired'), rate_limited: count('rate_limited') },
        results.join(),
      ).toEqual({
        acquired: 3,
        rate_limited: 27,
      });
    });

    for (const mode of ['leased', 'atomic'] as const) {
      it(`the engine in ${mode} mode: 16 concurrent duplicates of a key run it once`, async () => {
        const db = drizzle(client);
        const idempotency = createIdempotency({
          store: createDrizzleStore(db),
          defaults: { mode },
        });
        const key = `dup-${mode}-${globalThis.crypto.randomUUID()}`;
        let runs = 0;
        const outcomes = await Promise.all(
          Array.from({ length: 16 }, () =>
            idempotency
              .execute({ tenantId: 't', operation: 'pay', key, fingerprint: 'f' }, (exec) =>
                db.transaction(async (tx) => {
                  runs++;
                  await tx.execute(raw`select pg_sleep(0.02)`);
                  const response = { status: 201, headers: {}, body: '{}' };
                  await exec.complete(tx, response);
                  return response;
                }),
              )
              .then(
                (outcome) => outcome.kind,
                (error) => (isIdempotencyError(error) ? error.code : `threw: ${error}`),
              ),
          ),
        );
        expect(
          outcomes.filter((o) => o === 'executed'),
          outcomes.join(),
        ).toHaveLength(1);
        expect(
          outcomes.every((o) => ['executed', 'replayed', 'idempotency_key_in_use'].includes(o)),
          outcomes.join(),
        ).toBe(true);
        // Atomic mode runs a handler per duplicate; only one transaction commits.
        if (mode === 'leased') expect(runs).toBe(1);
      });
    }

    // A limit, not a contract case: the holder's own heartbeat (renew) commits a newer version
    // of the key's row while its business transaction runs; under REPEATABLE READ and
    // SERIALIZABLE that transaction's `complete` then fails with 40001 and rolls back. The key
    // stays held, and the same transaction run again completes it.
    it('complete(tx) in a transaction whose snapshot predates its own renew', async () => {
      const store = createDrizzleStore(drizzle(client));
      const run = globalThis.crypto.randomUUID().slice(0, 8);
      const id = { tenantId: `iso-${run}`, operation: 'iso.pay', key: `iso-${run}` };
      const input = {
        ...id,
        principal: 'p',
        fingerprint: 'f',
        ownerToken: globalThis.crypto.randomUUID(),
        leaseMs: 60_000,
        ttlMs: 60_000,
        onExpiredLease: 'resume' as const,
        rateLimit: undefined,
      };
      assert.equal((await store.reserve(input)).kind, 'acquired');
      const response = { status: 200, headers: {}, body: 'ok' };
      const attempt = () =>
        store.transaction(async (tx) => {
          await tx.execute(raw`select 1`); // the transaction's snapshot, at its first statement
          assert.equal(await store.renew(id, input.ownerToken, 60_000), 'ok');
          return store.complete(tx, id, input.ownerToken, response, 60_000);
        });
      if (level === 'read committed') {
        expect(await attempt()).toBe('ok');
        return;
      }
      await expect(attempt()).rejects.toMatchObject({ cause: { code: '40001' } });
      const held = await store.lookup(id);
      expect(held?.record).toMatchObject({
        state: 'in_progress',
        ownerToken: input.ownerToken,
        recoveryPoint: INITIAL_RECOVERY_POINT,
      });
      // Run again, the transaction's snapshot comes after the renew.
      expect(
        await store.transaction((tx) => store.complete(tx, id, input.ownerToken, response, 60_000)),
      ).toBe('ok');
    });
  });
}
