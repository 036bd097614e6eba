import { sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { preparedStatement } from './prepared-statement.ts';

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('prepared');
});
afterAll(async () => {
  await t?.drop();
});

// A marker in the text, so the test finds its own statement in pg_prepared_statements.
const echo = preparedStatement<{ marker: string; a: string; b: number }>(
  'once_test_echo',
  sql`select 'prepared-statement-test' as marker, ${sql.placeholder('a')}::text as a,
      (${sql.placeholder('b')}::int + 1)::int as b`,
);
const countPrepared = sql`select count(*)::int as n from pg_prepared_statements
  where statement like '%prepared-statement-test%' and statement not like '%pg_prepared_statements%'`;

describe('preparedStatement', () => {
  it('on postgres.js: fills the placeholders per call and prepares the statement once per connection (one round trip after)', async () => {
    const client = postgres(t.url, { max: 1, onnotice: () => {} });
    try {
      const db = drizzlePostgresJs(client);
      for (let i = 0; i < 3; i++) {
        expect(await echo(db, { a: `v${i}`, b: i })).toEqual([
          { marker: 'prepared-statement-test', a: `v${i}`, b: i + 1 },
        ]);
      }
      // Inside a transaction too (the atomic insert runs in the caller's tx).
      const inTx = await db.transaction((tx) => echo(tx, { a: 'tx', b: 41 }));
      expect(inTx).toEqual([{ marker: 'prepared-statement-test', a: 'tx', b: 42 }]);
      const counted = (await db.execute(countPrepared)) as unknown as { n: number }[];
      expect(counted[0]?.n).toBe(1);
    } finally {
      await client.end({ timeout: 1 });
    }
  });

  it('on postgres.js with prepare: false (PgBouncer): same rows, nothing prepared', async () => {
    const client = postgres(t.url, { max: 1, prepare: false, onnotice: () => {} });
    try {
      const db = drizzlePostgresJs(client);
      expect(await echo(db, { a: 'x', b: 1 })).toEqual([
        { marker: 'prepared-statement-test', a: 'x', b: 2 },
      ]);
      const counted = (await db.execute(countPrepared)) as unknown as { n: number }[];
      expect(counted[0]?.n).toBe(0);
    } finally {
      await client.end({ timeout: 1 });
    }
  });

  it('on node-postgres: same rows, left unnamed (one round trip there already)', async () => {
    const pool = new pg.Pool({ connectionString: t.url, max: 1 });
    try {
      const db = drizzleNodePg(pool);
      for (let i = 0; i < 2; i++) {
        expect(await echo(db, { a: `n${i}`, b: i })).toEqual([
          { marker: 'prepared-statement-test', a: `n${i}`, b: i + 1 },
        ]);
      }
      const { rows } = await db.execute<{ n: number }>(countPrepared);
      expect(rows[0]?.n).toBe(0);
    } finally {
      await pool.end();
    }
  });
});
