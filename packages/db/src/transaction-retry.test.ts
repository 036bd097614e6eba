import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './testing/index.ts';
import { withTransactionRetry } from './transaction-retry.ts';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase('db_tx_retry');
  await database.client.sql`create table tx_retry_counters (id int primary key, n int not null)`;
  await database.client.sql`insert into tx_retry_counters values (1, 0), (2, 0)`;
});
afterAll(async () => {
  await database?.drop();
});

describe('withTransactionRetry', () => {
  it('retries a SERIALIZABLE transaction the server aborted with 40001, and both writes land', async () => {
    const { sql } = database.client;
    // Classic write skew: each reads the sum of both rows and writes its own row. Run in
    // lockstep (both read before either writes), SERIALIZABLE aborts one with 40001.
    let bothRead: () => void = () => {};
    const barrier = new Promise<void>((resolve) => {
      let reads = 0;
      bothRead = () => {
        if (++reads === 2) resolve();
      };
    });
    const retries: (string | undefined)[] = [];
    const firstAttempt = new Set<number>();
    const bump = (id: number) =>
      withTransactionRetry(
        () =>
          sql.begin('isolation level serializable', async (tx) => {
            const [{ total } = { total: 0 }] = await tx<{ total: number }[]>`
              select sum(n)::int as total from tx_retry_counters`;
            if (!firstAttempt.has(id)) {
              firstAttempt.add(id);
              bothRead();
              await barrier;
            }
            await tx`update tx_retry_counters set n = ${total + 1} where id = ${id}`;
          }),
        { onRetry: ({ code }) => retries.push(code) },
      );
    await Promise.all([bump(1), bump(2)]);
    expect(retries).toEqual(['40001']);
    const rows = await sql<{ id: number; n: number }[]>`
      select id, n from tx_retry_counters order by id`;
    // Serial order: one saw 0 and wrote 1; the retried one saw 1 and wrote 2.
    expect(rows.map((r) => r.n).sort()).toEqual([1, 2]);
  });

  it('does not retry other errors', async () => {
    let calls = 0;
    await expect(
      withTransactionRetry(async () => {
        calls++;
        throw Object.assign(new Error('unique'), { code: '23505' });
      }),
    ).rejects.toThrow('unique');
    expect(calls).toBe(1);
  });
});
