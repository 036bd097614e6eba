import { eq } from 'drizzle-orm';
import { jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresPool } from './postgres-pool.ts';
import {
  createReplaceableSql,
  isDiscardedDriverConnectionError,
  isPostgresNullSocketWrite,
} from './replaceable-pool.ts';
import { createEmptyTestDatabase, type EmptyTestDatabase } from './testing/index.ts';

const documents = pgTable('replaceable_pool_documents', {
  id: text('id').primaryKey(),
  body: jsonb('body').$type<Record<string, string>>().notNull(),
});

/** Drizzle on a replaceable pool, the way web, worker and processor hold their database. */
function openReplaceableClient(url: string) {
  const pool = createReplaceableSql(
    () => openPostgresPool(url, { applicationName: 'test-replaceable' }),
    () => {},
  );
  return { ...pool, db: drizzle(pool.sql) };
}

let database: EmptyTestDatabase;
let admin: postgres.Sql;
beforeAll(async () => {
  database = await createEmptyTestDatabase('db_replaceable_pool');
  admin = postgres(database.url, { max: 1, onnotice: () => {} });
  await admin`create table replaceable_pool_documents (id text primary key, body jsonb not null)`;
});
afterAll(async () => {
  await admin?.end();
  await database?.drop();
});

describe('createReplaceableSql', () => {
  it('after replace: a new backend, and Drizzle still stores jsonb as an object (not a string)', async () => {
    const client = openReplaceableClient(database.url);
    try {
      const [before] = await client.sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      client.replace('test');
      const [after] = await client.sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      expect(after?.pid).not.toBe(before?.pid);

      // The regression: the new pool lacked Drizzle's pass-through jsonb serializer, so
      // `{ payment_id }` was JSON-encoded twice and `body->>'payment_id'` read null.
      await client.db.transaction((tx) =>
        tx.insert(documents).values({ id: 'd1', body: { payment_id: 'pay_1' } }),
      );
      const [row] = await client.sql<{ kind: string; paymentId: string | null }[]>`
        select jsonb_typeof(body) as kind, body->>'payment_id' as "paymentId"
        from replaceable_pool_documents where id = 'd1'`;
      expect(row).toEqual({ kind: 'object', paymentId: 'pay_1' });
      const [read] = await client.db.select().from(documents).where(eq(documents.id, 'd1'));
      expect(read?.body).toEqual({ payment_id: 'pay_1' });
    } finally {
      await client.close();
    }
  });
  it('keeps answering queries and re-LISTENs after the pool is replaced', async () => {
    const client = openReplaceableClient(database.url);
    try {
      const heard: string[] = [];
      await client.sql.listen('replaceable_test', (payload) => heard.push(payload));
      const [before] = await client.sql<{ pid: number }[]>`select pg_backend_pid() as pid`;

      client.replace('test');
      const [after] = await client.sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      expect(after?.pid).not.toBe(before?.pid);
      const [{ n } = { n: 0 }] = await client.db.execute<{ n: number }>('select 1 as n' as never);
      expect(Number(n)).toBe(1);

      const deadline = Date.now() + 10_000;
      while (!heard.includes('after-replace') && Date.now() < deadline) {
        await admin`select pg_notify('replaceable_test', 'after-replace')`;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(heard).toContain('after-replace');
    } finally {
      await client.close();
    }
  });
});

describe('isPostgresNullSocketWrite', () => {
  it('recognises only the driver bug', () => {
    const bug = new TypeError("Cannot read properties of null (reading 'write')");
    bug.stack = `${bug.message}\n    at Immediate.nextWrite (file:///x/node_modules/postgres/src/connection.js:255:22)`;
    expect(isPostgresNullSocketWrite(bug)).toBe(true);
    const ours = new TypeError("Cannot read properties of null (reading 'write')");
    ours.stack = `${ours.message}\n    at handler (file:///x/apps/web/src/server/payments-api.ts:1:1)`;
    expect(isPostgresNullSocketWrite(ours)).toBe(false);
  });
});

describe('isDiscardedDriverConnectionError', () => {
  it('accepts raw driver connection failures, not errors our own queries were wrapped in', () => {
    const destroyed = Object.assign(new Error('write CONNECTION_DESTROYED 127.0.0.1:5432'), {
      code: 'CONNECTION_DESTROYED',
    });
    expect(isDiscardedDriverConnectionError(destroyed)).toBe(true);
    const terminated = Object.assign(
      new Error('terminating connection due to administrator command'),
      {
        code: '57P01',
      },
    );
    expect(isDiscardedDriverConnectionError(terminated)).toBe(true);
    // Drizzle's "Failed query" wrapper: one of our queries nobody awaited, a bug.
    const ours = new Error('Failed query: select 1', { cause: destroyed });
    expect(isDiscardedDriverConnectionError(ours)).toBe(false);
    expect(
      isDiscardedDriverConnectionError(Object.assign(new Error('dup'), { code: '23505' })),
    ).toBe(false);
    expect(isDiscardedDriverConnectionError('CONNECTION_DESTROYED')).toBe(false);
  });
});
