import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresPool } from './postgres-pool.ts';
import { type PgBouncer, startPgBouncer } from './testing/pgbouncer.ts';
import { createEmptyTestDatabase, type EmptyTestDatabase } from './testing/test-database.ts';

// A query is "stuck" when it is not answered within this bound: every query here takes
// milliseconds, so 8 s is a wedged connection, never a slow one.
const STUCK_MS = 8_000;

async function answeredWithin(
  query: PromiseLike<unknown>,
): Promise<'answered' | 'failed' | 'stuck'> {
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<'stuck'>((resolve) => {
    timer = setTimeout(() => resolve('stuck'), STUCK_MS);
  });
  try {
    return await Promise.race([
      Promise.resolve(query).then(
        () => 'answered' as const,
        () => 'failed' as const,
      ),
      stuck,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

// Pools with `max_pipeline` take their options as a variable: postgres.js reads it, but its
// types do not declare it, and only a literal is checked for properties a type lacks.
let database: EmptyTestDatabase;
beforeAll(async () => {
  database = await createEmptyTestDatabase('pipelining');
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  await sql`create table counted (id text primary key, n int not null default 0)`;
  await sql.end();
});
afterAll(() => database.drop());

describe('a transaction-mode pool through PgBouncer', () => {
  let bouncer: PgBouncer;
  beforeAll(async () => {
    bouncer = await startPgBouncer(database.adminUrl, { poolSize: 4 });
  });
  afterAll(() => bouncer.stop());

  // PgBouncer gives a server back at a ReadyForQuery outside a transaction; a query written
  // behind it on the same client connection (pipelined) whose answer comes later (postgres.js
  // sends Parse/Describe/Flush first for a query with parameters) is then answered on a server
  // no client holds: PgBouncer drops the answer and the connection waits for ever.
  it('answers every query while 48 callers share 20 connections and 4 servers', async () => {
    const url = new URL(bouncer.url(database.url.split('/').pop()!));
    const sql = openPostgresPool(url.toString(), {
      applicationName: 'pipelining-test',
      max: 20,
      poolMode: 'transaction',
    });
    const outcomes = { answered: 0, failed: 0, stuck: 0 };
    const until = Date.now() + 6_000;
    try {
      await Promise.all(
        Array.from({ length: 48 }, async (_, caller) => {
          for (let i = 0; Date.now() < until; i++) {
            const id = `${caller}-${i}`;
            const query =
              i % 3 === 0
                ? sql.begin(async (tx) => {
                    await tx`insert into counted (id) values (${id}) on conflict do nothing`;
                    await tx`update counted set n = n + 1 where id = ${id}`;
                  })
                : i % 3 === 1
                  ? sql`select count(*) from counted`
                  : sql`select n from counted where id = ${id}`;
            outcomes[await answeredWithin(query)]++;
          }
        }),
      );
    } finally {
      await sql.end({ timeout: 1 });
    }
    expect(outcomes.stuck).toBe(0);
    expect(outcomes.failed).toBe(0);
    expect(outcomes.answered).toBeGreaterThan(500);
  }, 60_000);
});

describe('sql.begin', () => {
  // postgres.js reserves a transaction's connection in a hook its pipelining check could skip
  // (porsager/postgres#1189): BEGIN then ran on a connection the pool still handed out.
  it('reserves its connection when BEGIN is written behind another query at the pipeline limit', async () => {
    const options = { onnotice: () => {}, max: 1, max_pipeline: 1 };
    const sql = postgres(database.url, options);
    try {
      await sql`select 1`;
      // postgres.js runs a query when it is awaited: sent now, so BEGIN goes behind it.
      const slow = sql`select pg_sleep(0.1)`.execute();
      const transaction = sql.begin(async (tx) => {
        const [row] = await tx<{ xid: string }[]>`select txid_current()::text as xid`;
        await tx`select pg_sleep(0.1)`;
        return row!.xid;
      });
      const outside = sql<{ xid: string }[]>`select txid_current()::text as xid`;
      const [, transactionXid, [row]] = await Promise.all([slow, transaction, outside]);
      expect(row!.xid).not.toBe(transactionXid);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('works without pipelining (max_pipeline: 0), as the transaction-mode pool runs', async () => {
    const options = { onnotice: () => {}, max: 2, max_pipeline: 0 };
    const sql = postgres(database.url, options);
    try {
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          sql.begin(async (tx) => {
            await tx`insert into counted (id) values (${`begin-${i}`})`;
            const [row] = await tx<
              { n: number }[]
            >`select n from counted where id = ${`begin-${i}`}`;
            return row!.n;
          }),
        ),
      );
      expect(results).toEqual([0, 0, 0, 0, 0, 0]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});
