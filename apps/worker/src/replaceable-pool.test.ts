import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLog } from './logger.ts';
import { createReplaceablePool, isPostgresNullSocketWrite } from './replaceable-pool.ts';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase('worker_pool');
});
afterAll(async () => {
  await database?.drop();
});

describe('createReplaceablePool', () => {
  it('keeps answering queries and re-LISTENs after the pool is replaced', async () => {
    const pool = createReplaceablePool(
      database.url,
      { applicationName: 'test-replaceable' },
      silentLog,
    );
    try {
      const heard: string[] = [];
      await pool.sql.listen('replaceable_test', (payload) => heard.push(payload));
      const [before] = await pool.sql<{ pid: number }[]>`select pg_backend_pid() as pid`;

      pool.replace('test');
      const [after] = await pool.sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      expect(after?.pid).not.toBe(before?.pid);
      const [{ n } = { n: 0 }] = await pool.db.execute<{ n: number }>('select 1 as n' as never);
      expect(Number(n)).toBe(1);

      const deadline = Date.now() + 10_000;
      while (!heard.includes('after-replace') && Date.now() < deadline) {
        await database.client.sql`select pg_notify('replaceable_test', 'after-replace')`;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(heard).toContain('after-replace');
    } finally {
      await pool.close();
    }
  });
});

describe('isPostgresNullSocketWrite', () => {
  it('recognises only the driver bug', () => {
    const bug = new TypeError("Cannot read properties of null (reading 'write')");
    bug.stack = `${bug.message}\n    at Immediate.nextWrite (file:///x/node_modules/postgres/src/connection.js:255:22)`;
    expect(isPostgresNullSocketWrite(bug)).toBe(true);
    const ours = new TypeError("Cannot read properties of null (reading 'write')");
    ours.stack = `${ours.message}\n    at chargePayment (file:///x/apps/worker/src/charge-payment.ts:1:1)`;
    expect(isPostgresNullSocketWrite(ours)).toBe(false);
  });
});
