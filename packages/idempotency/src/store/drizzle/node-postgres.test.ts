import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { computeFingerprint } from '../../core/fingerprint.ts';
import { advanceTo, respond } from '../../core/phases.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { createKeyOperator } from './operator/key-operator.ts';
import { reapExpiredKeys } from './reaper.ts';
import { createDrizzleStore } from './store.ts';
import { sweepExpiredLeases } from './sweeper.ts';

let t: IdempotencyTestDatabase;
let pool: pg.Pool;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('nodepg');
  await t.sql`create table orders (key text primary key)`;
  pool = new pg.Pool({ connectionString: t.url, max: 4 });
});
afterAll(async () => {
  await pool?.end();
  await t?.drop();
});

describe('drizzle node-postgres', () => {
  it('works the same as postgres.js: execute, complete in the caller transaction, phases, replay, maintenance', async () => {
    const db = drizzle(pool);
    const idempotency = createIdempotency({ store: createDrizzleStore(db) });
    const request = {
      tenantId: 't',
      operation: 'op',
      key: 'k',
      fingerprint: computeFingerprint('op', { a: 1 }),
    };
    const first = await idempotency.execute(request, (exec) =>
      db.transaction(async (tx) => {
        await tx.execute(sql`insert into orders values ('k')`);
        const response = {
          status: 201,
          headers: { 'content-type': 'application/json' },
          body: '{"ok":true}',
        };
        await exec.complete(tx, response);
        return response;
      }),
    );
    expect(first.kind).toBe('executed');
    const replay = await idempotency.execute(request, async () => ({
      status: 500,
      headers: {},
      body: null,
    }));
    expect(replay).toEqual({
      kind: 'replayed',
      response: {
        status: 201,
        headers: { 'content-type': 'application/json' },
        body: '{"ok":true}',
      },
    });

    const phased = await idempotency.execute({ ...request, key: 'phased' }, (exec) =>
      exec.runPhases({
        started: async () => advanceTo('next', { n: 1 }),
        next: async (_tx, e) =>
          respond({ status: 200, headers: {}, body: JSON.stringify(e.recoveryData) }),
      }),
    );
    expect(phased.response.body).toBe('{"n":1}');
    expect(await reapExpiredKeys(db)).toEqual({ deleted: 0, tombstoned: 0, batches: 2 });
    expect(await sweepExpiredLeases(db)).toEqual({
      released: 0,
      markedUnknown: 0,
      leftForResume: 0,
    });
  });

  it('the key operator reads the same field types as with postgres.js, and evicts', async () => {
    const db = drizzle(pool);
    const request = { tenantId: 'ops', operation: 'op', key: 'k', fingerprint: 'ab'.repeat(32) };
    await createIdempotency({ store: createDrizzleStore(db) }).execute(request, async () => ({
      status: 201,
      headers: { 'x-a': '1' },
      body: 'done',
    }));
    const operator = createKeyOperator(db);
    const [seen] = await operator.list({ tenantId: 'ops' });
    expect(seen).toMatchObject({
      state: 'completed',
      attempts: 1,
      responseStatus: 201,
      leaseExpired: false,
      lockedUntil: null,
      fingerprintPrefix: 'ab'.repeat(6),
      evictable: true,
      releasable: false,
    });
    expect(seen?.createdAt).toBeInstanceOf(Date);
    expect(seen?.completedAt).toBeInstanceOf(Date);
    const details = await operator.inspect(request, { includeResponse: true });
    expect(details?.response).toEqual({
      status: 201,
      headers: { 'x-a': '1' },
      body: 'done',
      keyId: null,
    });
    const audit = await operator.evict(request, {
      revision: seen?.revision ?? '',
      actor: 'ops:alice',
      reason: 'test',
    });
    expect(audit).toMatchObject({ fromState: 'completed', attempts: 1, responseStatus: 201 });
    expect(audit.keyCreatedAt.getTime()).toBe(seen?.createdAt.getTime());
  });
});
