import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';

/**
 * `checkout.pay` when the server rolls its transaction back for a conflict, as CockroachDB and
 * YugabyteDB do routinely under SERIALIZABLE (40001) and PostgreSQL does on a deadlock
 * (40P01). A trigger injects the failure into the next N inserts of a table (a sequence:
 * nextval is not rolled back with the transaction): the payment's insert, before the key is
 * written, or the timeline's, the last write, after the key was inserted in the transaction. The whole transaction,
 * idempotency key included, runs again: one payment, one completed key, one answer.
 */
describe('checkout.pay retries a transaction the server rolled back (40001, 40P01)', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    h = await createApiTestHarness('api_pay_40001');
    const { sql } = h.database.client;
    await sql`create table injected_failure (target text not null, code text not null)`;
    await sql`create sequence injected_failure_seq`;
    await sql.unsafe(`
      create function inject_failure() returns trigger language plpgsql as $$
      declare failure text;
      begin
        select code into failure from injected_failure where target = tg_table_name limit 1;
        if failure is not null and nextval('injected_failure_seq') <= (
          select count(*) from injected_failure where target = tg_table_name
        ) then
          raise exception 'injected %', failure using errcode = failure;
        end if;
        return new;
      end $$`);
    for (const table of ['payments', 'payment_events']) {
      await sql.unsafe(`
        create trigger inject_failure before insert on ${table}
        for each row execute function inject_failure()`);
    }
  });
  afterAll(async () => {
    await h?.drop();
  });
  beforeEach(async () => {
    const { sql } = h.database.client;
    await sql`truncate payments, outbox_jobs, idempotency_keys, idempotency_rate_limits, injected_failure`;
    await sql`alter sequence injected_failure_seq restart`;
  });

  /** The next `times` inserts into `table` fail with `code`. */
  async function inject(code: string, times: number, table = 'payments') {
    const { sql } = h.database.client;
    for (let i = 0; i < times; i++) {
      await sql`insert into injected_failure values (${table}, ${code})`;
    }
  }

  async function rows() {
    const [row] = await h.database.client.sql<
      { payments: number; jobs: number; completed: number }[]
    >`
      select (select count(*)::int from payments) as payments,
             (select count(*)::int from outbox_jobs) as jobs,
             (select count(*)::int from idempotency_keys where state = 'completed') as completed`;
    return row!;
  }

  for (const code of ['40001', '40P01']) {
    it(`${code} twice, then the third run commits: one payment, one job, one completed key`, async () => {
      await inject(code, 2);
      const { api } = h.caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() });
      const result = await api.checkout.pay({ lines: [{ productId: 'book_sre', quantity: 1 }] });
      expect(result.status).toBe('processing');
      expect(await rows()).toEqual({ payments: 1, jobs: 1, completed: 1 });
    });
  }

  it('40001 after the key was inserted in the transaction (the last write): the rerun inserts it again, once', async () => {
    await inject('40001', 2, 'payment_events');
    const { api } = h.caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() });
    const result = await api.checkout.pay({ lines: [{ productId: 'book_sre', quantity: 1 }] });
    expect(result.status).toBe('processing');
    expect(await rows()).toEqual({ payments: 1, jobs: 1, completed: 1 });
  });

  it('a conflict that never clears is refused after 5 runs, and nothing is written', async () => {
    await inject('40001', 5);
    const { api } = h.caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() });
    await expect(
      api.checkout.pay({ lines: [{ productId: 'book_sre', quantity: 1 }] }),
    ).rejects.toThrow();
    expect(await rows()).toEqual({ payments: 0, jobs: 0, completed: 0 });
  });

  it('other errors are not retried: a unique violation is raised once', async () => {
    await inject('23505', 1);
    const { api } = h.caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() });
    await expect(
      api.checkout.pay({ lines: [{ productId: 'book_sre', quantity: 1 }] }),
    ).rejects.toThrow();
    const [seq] = await h.database.client.sql<{ last_value: number }[]>`
      select last_value::int from injected_failure_seq`;
    expect(seq!.last_value).toBe(1);
  });
});
