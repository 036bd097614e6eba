import { randomUUID } from 'node:crypto';
import { createDatabaseClient, type DatabaseClient } from '@once/db';
import { seedDemoData } from '@once/db/seed';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContext } from '../../context.ts';
import { createApiDependencies } from '../../dependencies.ts';
import { createCaller } from '../../root.ts';
import { bearer, TEST_SESSION_SECRET } from '../../testing/api-test-harness.ts';

/**
 * `pay` on a database without NOTIFY, as CockroachDB or a transaction-mode pooler presents it:
 * here a `pg_notify` earlier on the search path that refuses with 0A000
 * (feature_not_supported). With `ONCE_OUTBOX_NOTIFY=0` (`outboxNotify: false`) the payment,
 * its job and its key are written all the same; the workers' poll finds the job.
 */
/** The SQLSTATE somewhere down an error's `cause` chain (tRPC and drizzle wrap it). */
function sqlStateOf(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && depth < 6; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

describe('checkout.pay with NOTIFY off', () => {
  let database: TestDatabase;
  let noNotify: DatabaseClient;

  beforeAll(async () => {
    database = await createTestDatabase('api_no_notify');
    await seedDemoData(database.client.db);
    const { sql } = database.client;
    await sql`create schema no_notify`;
    await sql.unsafe(`
      create function no_notify.pg_notify(text, text) returns void language plpgsql as $$
      begin
        raise exception 'LISTEN/NOTIFY are not supported' using errcode = '0A000';
      end $$`);
    const name = new URL(database.url).pathname.slice(1);
    await sql.unsafe(
      `alter database "${name}" set search_path = no_notify, "$user", public, pg_catalog`,
    );
    // New connections see the new search_path.
    noNotify = createDatabaseClient(database.url, { applicationName: 'test-no-notify' });
  });
  afterAll(async () => {
    await noNotify?.close();
    await database?.drop();
  });

  function payWith(outboxNotify: boolean | undefined) {
    const deps = createApiDependencies({
      db: noNotify.db,
      sessionSecret: TEST_SESSION_SECRET,
      ...(outboxNotify === undefined ? {} : { outboxNotify }),
    });
    const req = new Request('http://localhost/api/trpc', {
      headers: { ...bearer('tenant_a'), 'idempotency-key': randomUUID() },
    });
    const api = createCaller(createContext({ req, resHeaders: new Headers(), ...deps }));
    return api.checkout.pay({ lines: [{ productId: 'book_sre', quantity: 1 }] });
  }

  it('the stand-in engine really has no NOTIFY: with it on (the default), pay fails and writes nothing', async () => {
    const error = await payWith(undefined).catch((e: unknown) => e);
    expect(sqlStateOf(error)).toBe('0A000');
    const [row] = await database.client.sql<{ n: number }[]>`
      select count(*)::int as n from payments`;
    expect(row!.n).toBe(0);
  });

  it('with outboxNotify false, the payment, its outbox job and its completed key are written', async () => {
    const result = await payWith(false);
    const [row] = await database.client.sql<{ jobs: number; keys: number }[]>`
      select (select count(*)::int from outbox_jobs
               where payment_id = ${result.paymentId} and status = 'pending') as jobs,
             (select count(*)::int from idempotency_keys where state = 'completed') as keys`;
    expect(result.status).toBe('processing');
    expect(row).toEqual({ jobs: 1, keys: 1 });
  });

  it('ONCE_OUTBOX_NOTIFY=0 in the environment turns it off; anything but 0 or 1 refuses to start', () => {
    const base = { db: noNotify.db, sessionSecret: TEST_SESSION_SECRET };
    expect(createApiDependencies({ ...base, env: { ONCE_OUTBOX_NOTIFY: '0' } }).outboxNotify).toBe(
      false,
    );
    expect(createApiDependencies({ ...base, env: {} }).outboxNotify).toBe(true);
    expect(() => createApiDependencies({ ...base, env: { ONCE_OUTBOX_NOTIFY: 'off' } })).toThrow(
      /ONCE_OUTBOX_NOTIFY/,
    );
  });
});
