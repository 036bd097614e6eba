import { type PgBouncer, startPgBouncer } from '@once/postgres/testing';
import { sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../core/engine.ts';
import { isIdempotencyError } from '../core/errors.ts';
import type { Execution } from '../core/execution.ts';
import { storeContractCases } from '../store/contract/store-contract.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

/**
 * The library behind a real PgBouncer (Debian's 1.18) in transaction mode, the mode that saves
 * connections and gives each transaction whichever server connection is free: nothing a
 * session holds (named prepared statements, SET, LISTEN, session advisory locks) survives
 * from one transaction to the next. Four server connections serve every client here.
 *
 * What it takes (the repository's docs/scale-out.md): postgres.js created with `prepare: false` (the store's
 * hot statements are otherwise named, and PgBouncer before 1.21 cannot carry them) and
 * `max_pipeline: 0` (a query pipelined behind another can be answered after PgBouncer gave the
 * server away), or node-postgres, which does neither.
 */
const POOL_SIZE = 4;

let database: IdempotencyTestDatabase;
let bouncer: PgBouncer;
let viaPooler: postgres.Sql;
let db: PostgresJsDatabase;
let direct: postgres.Sql;

beforeAll(async () => {
  database = await createIdempotencyTestDatabase('pooler', 2);
  direct = database.sql;
  await direct`create table side_effects (key text not null)`;
  bouncer = await startPgBouncer(database.adminUrl, { poolSize: POOL_SIZE });
  // `max_pipeline` is read by postgres.js but not declared in its types.
  const options = { max: 20, prepare: false, max_pipeline: 0, onnotice: () => {} };
  viaPooler = postgres(bouncer.url(databaseName()), options);
  db = drizzle(viaPooler);
});
afterAll(async () => {
  await viaPooler?.end({ timeout: 1 });
  await bouncer?.stop();
  await database?.drop();
});

const databaseName = () => new URL(database.url).pathname.slice(1);

describe('the store contract through PgBouncer in transaction mode', () => {
  describe('postgres.js with prepare: false', () => {
    for (const c of storeContractCases(() => createDrizzleStore(db))) it(c.name, c.run);
  });

  describe('node-postgres (unnamed statements)', () => {
    let pool: pg.Pool;
    beforeAll(() => {
      pool = new pg.Pool({ connectionString: bouncer.url(databaseName()), max: 20 });
    });
    afterAll(async () => {
      await pool?.end();
    });
    for (const c of storeContractCases(() => createDrizzleStore(drizzleNodePg(pool)))) {
      it(c.name, c.run);
    }
  });
});

it("postgres.js's default (named statements) does not work through it: why prepare: false", async () => {
  const named = postgres(bouncer.url(databaseName()), { max: 1, onnotice: () => {} });
  const other = postgres(bouncer.url(databaseName()), { max: 1, prepare: false });
  const store = createDrizzleStore(drizzle(named));
  const input = (key: string, rateLimit?: { maxNewKeys: number; windowMs: number }) => ({
    tenantId: 'named',
    operation: 'pay',
    key,
    principal: 'p',
    fingerprint: 'f',
    ownerToken: key,
    leaseMs: 60_000,
    ttlMs: 60_000,
    onExpiredLease: 'resume' as const,
    rateLimit,
  });
  try {
    // Prepares the reservation's statement on the server connection this statement got.
    expect((await store.reserve(input('named-1'))).kind).toBe('acquired');
    // PgBouncer hands out the server connection used last: another client's transaction takes
    // it, so the next transaction of `named` runs on a server connection that never saw the
    // statement. (With more clients this is not a clean error: postgres.js's reply to a
    // statement it had named can hang.)
    await other.begin(async (tx) => {
      await tx`select 1`;
      const limited = store.reserve(input('named-2', { maxNewKeys: 10, windowMs: 60_000 }));
      await expect(limited).rejects.toMatchObject({ cause: { code: '26000' } });
    });
  } finally {
    await other.end({ timeout: 1 });
    await named.end({ timeout: 1 });
  }
});

type Mode = 'leased' | 'atomic';
/** What a duplicate may hear: the run, its replay, or 409 while the key is held. */
const ANSWERS = ['executed', 'replayed', 'idempotency_key_in_use'];

/** A request's handler: one side effect and the completed key, in one transaction. */
const payHandler =
  (key: string, database: PgDatabase<PgQueryResultHKT> = db) =>
  (exec: Execution<unknown>) =>
    database.transaction(async (tx) => {
      await tx.execute(sql`insert into side_effects (key) values (${key})`);
      await tx.execute(sql`select pg_sleep(0.01)`);
      const response = { status: 201, headers: {}, body: JSON.stringify({ key }) };
      await exec.complete(tx, response);
      return response;
    });

async function effectsPerKey(prefix: string): Promise<Map<string, number>> {
  const rows = await direct<{ key: string; n: number }[]>`
    select key, count(*)::int as n from side_effects where key like ${`${prefix}%`} group by key`;
  return new Map(rows.map((r) => [r.key, r.n]));
}

describe.each<Mode>(['leased', 'atomic'])('the engine in %s mode through PgBouncer', (mode) => {
  it('20 concurrent duplicates of a key run it once, over 4 server connections', async () => {
    const idempotency = createIdempotency({ store: createDrizzleStore(db), defaults: { mode } });
    const prefix = `dup-${mode}-`;
    for (let round = 0; round < 5; round++) {
      const key = `${prefix}${round}`;
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, () =>
          idempotency
            .execute({ tenantId: 't', operation: 'pay', key, fingerprint: 'fp' }, payHandler(key))
            .then(
              (outcome) => outcome.kind,
              (error) => (isIdempotencyError(error) ? error.code : Promise.reject(error)),
            ),
        ),
      );
      expect(
        outcomes.filter((o) => o === 'executed'),
        outcomes.join(),
      ).toHaveLength(1);
      expect(
        outcomes.every((o) => ANSWERS.includes(o)),
        outcomes.join(),
      ).toBe(true);
    }
    expect([...(await effectsPerKey(prefix)).values()]).toEqual([1, 1, 1, 1, 1]);
    const [servers] = await direct<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = ${databaseName()} and pid <> pg_backend_pid()`;
    // 20 client connections, never more than the pool's server connections (+ `direct`'s).
    expect(servers?.n).toBeLessThanOrEqual(POOL_SIZE + 1);
  });

  // On node-postgres: postgres.js 3.4.9 can throw from a setImmediate when its connection is
  // dropped (porsager/postgres#1154), which the apps survive by swapping the pool
  // (installDatabaseCrashPolicy) and a test runner reports as an uncaught error.
  it('a pooler restart mid-run loses no acknowledged key and runs nothing twice', async () => {
    const pool = new pg.Pool({ connectionString: bouncer.url(databaseName()), max: 20 });
    // A dropped connection is an 'error' event: on an idle client the pool's, on one a
    // transaction holds the client's own (uncaught without a listener); the query rejects too.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const poolDb = drizzleNodePg(pool);
    const idempotency = createIdempotency({
      store: createDrizzleStore(poolDb),
      // A lease a request orphaned when its connection dropped ends soon: its retry takes over.
      defaults: { mode, leaseMs: 1_000 },
    });
    const prefix = `restart-${mode}-`;
    const keys = Array.from({ length: 60 }, (_, i) => `${prefix}${i}`);
    const acknowledged = new Set<string>();
    let inFlight = 0;
    let inFlightAtRestart = -1;
    const errors = new Map<string, number>();
    const queue = [...keys];
    const deadline = Date.now() + 25_000;
    /** One client: each key until it is answered (executed or replayed), as a client retries. */
    async function client() {
      for (let key = queue.shift(); key; key = queue.shift()) {
        while (Date.now() < deadline) {
          inFlight++;
          try {
            await idempotency.execute(
              { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' },
              payHandler(key, poolDb),
            );
            acknowledged.add(key);
            break;
          } catch (error) {
            const code = isIdempotencyError(error) ? error.code : 'other';
            errors.set(code, (errors.get(code) ?? 0) + 1);
            await new Promise((resolve) => setTimeout(resolve, 100));
          } finally {
            inFlight--;
          }
        }
      }
    }
    const clients = Array.from({ length: 8 }, client);
    while (acknowledged.size < 10 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    inFlightAtRestart = inFlight;
    await bouncer.restart();
    await Promise.all(clients);
    // Not awaited: drizzle's node-postgres transaction never releases a client whose BEGIN
    // failed (the dropped connection), and end() waits for every client.
    void pool.end();

    const seen = JSON.stringify(Object.fromEntries(errors));
    expect(inFlightAtRestart, `in flight when the pooler died; errors ${seen}`).toBeGreaterThan(0);
    expect(errors.size, 'the restart was felt').toBeGreaterThan(0);
    expect([...acknowledged].sort()).toEqual([...keys].sort());
    const effects = await effectsPerKey(prefix);
    expect(keys.filter((key) => effects.get(key) !== 1)).toEqual([]);
    const completed = await direct<{ n: number }[]>`
      select count(*)::int as n from idempotency_keys where key like ${`${prefix}%`} and state = 'completed'`;
    expect(completed[0]?.n).toBe(keys.length);
  }, 60_000);
});
