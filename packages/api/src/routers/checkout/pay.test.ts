import { randomUUID } from 'node:crypto';
import { downstreamKeyFor } from '@once/payments';
import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';
import { refusal } from '../../testing/refusal.ts';

describe('checkout.pay', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    h = await createApiTestHarness('api_pay');
  });
  afterAll(async () => {
    await h.drop();
  });
  beforeEach(async () => {
    await h.database.client
      .sql`truncate payments, outbox_jobs, idempotency_keys, idempotency_rate_limits`;
  });

  async function counts() {
    const [row] = await h.database.client.sql<
      { payments: number; jobs: number; completed: number }[]
    >`
      select (select count(*)::int from payments) as payments,
             (select count(*)::int from outbox_jobs) as jobs,
             (select count(*)::int from idempotency_keys where state = 'completed') as completed`;
    return row!;
  }

  it('writes the payment, its outbox job and the completed key in one go, priced by the server', async () => {
    const key = randomUUID();
    const { api } = h.caller({ ...bearer('tenant_a'), 'idempotency-key': key });
    const result = await api.checkout.pay({
      // A client-sent price is not part of the input: it is stripped and never used.
      lines: [
        { productId: 'book_sre', quantity: 2, unitAmount: 1 } as never,
        { productId: 'bookmark', quantity: 1 },
      ],
      customerEmail: 'ada@example.com',
      paymentMethod: 'pm_card_chargeDeclined',
    });
    expect(result).toMatchObject({ status: 'processing', amount: 2 * 3999 + 299, currency: 'usd' });
    expect(result.lines).toEqual([
      {
        productId: 'book_sre',
        name: 'Site Reliability Engineering',
        quantity: 2,
        unitAmount: 3999,
      },
      { productId: 'bookmark', name: 'Leather bookmark', quantity: 1, unitAmount: 299 },
    ]);

    const { sql } = h.database.client;
    const [payment] = await sql`select * from payments where id = ${result.paymentId}`;
    expect(payment).toMatchObject({
      tenant_id: 'tenant_a',
      status: 'processing',
      amount: 8297,
      idempotency_key: key,
      downstream_key: downstreamKeyFor('tenant_a', key),
      customer_email: 'ada@example.com',
    });
    const jobs = await sql`select * from outbox_jobs where payment_id = ${result.paymentId}`;
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({
      tenant_id: 'tenant_a',
      kind: 'charge_payment',
      status: 'pending',
      downstream_key: downstreamKeyFor('tenant_a', key),
    });
    expect(jobs[0]!.payload).toEqual({
      amount: 8297,
      currency: 'usd',
      paymentMethod: 'pm_card_chargeDeclined',
    });
    const [stored] = await sql`select * from idempotency_keys where key = ${key}`;
    expect(stored).toMatchObject({
      tenant_id: 'tenant_a',
      operation: 'checkout.pay',
      state: 'completed',
      response_status: 200,
    });
    expect(JSON.parse(stored!.response_body)).toEqual(result);
  });

  it('replays the stored result for the same key and input, without a second payment', async () => {
    const key = randomUUID();
    const input = { lines: [{ productId: 'book_ddia', quantity: 1 }] };
    const first = await h
      .caller({ ...bearer('tenant_a'), 'idempotency-key': key })
      .api.checkout.pay(input);
    const again = h.caller({ ...bearer('tenant_a'), 'idempotency-key': key });
    const second = await again.api.checkout.pay(input);
    expect(second).toEqual(first);
    expect(again.resHeaders.get('idempotent-replayed')).toBe('true');
    expect(await counts()).toEqual({ payments: 1, jobs: 1, completed: 1 });
  });

  it('wakes the workers with a NOTIFY that is delivered only on commit', async () => {
    const listener = h.database.client.sql;
    const heard: string[] = [];
    const subscription = await listener.listen('once_outbox', (payload) => heard.push(payload));
    try {
      const { api } = h.caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() });
      await api.checkout.pay({ lines: [{ productId: 'bookmark', quantity: 1 }] });
      await expect.poll(() => heard.length).toBe(1);
      expect(JSON.parse(heard[0]!)).toMatchObject({ tenantId: 'tenant_a' });
    } finally {
      await subscription.unlisten();
    }
  });

  it.each([
    ['empty_cart', { lines: [] }],
    ['quantity_out_of_range', { lines: [{ productId: 'book_sre', quantity: 0 }] }],
    ['quantity_out_of_range', { lines: [{ productId: 'book_sre', quantity: 100 }] }],
    [
      'quantity_out_of_range',
      {
        lines: [
          { productId: 'book_sre', quantity: 60 },
          { productId: 'book_sre', quantity: 60 },
        ],
      },
    ],
    ['unknown_product', { lines: [{ productId: 'no_such_book', quantity: 1 }] }],
    // A product of ANOTHER tenant is unknown here: catalogues never mix.
    ['unknown_product', { lines: [{ productId: 'espresso_beans', quantity: 1 }] }],
    ['invalid_input', { lines: [{ productId: 'book_sre', quantity: 1.5 }] }],
    ['invalid_input', { lines: [{ productId: 'book_sre', quantity: 1 }], customerEmail: 'nope' }],
    [
      'invalid_input',
      { lines: [{ productId: 'book_sre', quantity: 1 }], paymentMethod: '4242 4242' },
    ],
  ])('refuses %s with a stable code and writes nothing', async (code, input) => {
    const key = randomUUID();
    const { api } = h.caller({ ...bearer('tenant_a'), 'idempotency-key': key });
    expect(await refusal(api.checkout.pay(input as never))).toEqual({ code, trpc: 'BAD_REQUEST' });
    expect(await counts()).toEqual({ payments: 0, jobs: 0, completed: 0 });
    // Refused input is not an outcome: nothing is stored for the key (no row, or a released
    // one; an `every` over no rows proved nothing), and the key then pays a fixed cart as a
    // first run, not a replay of the refusal.
    const keys = await h.database.client.sql`select state from idempotency_keys`;
    expect(keys.filter((k) => k.state !== 'released')).toEqual([]);
    const fixed = h.caller({ ...bearer('tenant_a'), 'idempotency-key': key });
    const paid = await fixed.api.checkout.pay({ lines: [{ productId: 'bookmark', quantity: 1 }] });
    expect(paid).toMatchObject({ status: 'processing', amount: 299 });
    expect(fixed.resHeaders.get('idempotent-replayed')).not.toBe('true');
    expect(await counts()).toEqual({ payments: 1, jobs: 1, completed: 1 });
  });

  it.each([
    [
      'more than 50 lines',
      { lines: Array.from({ length: 51 }, () => ({ productId: 'bookmark', quantity: 1 })) },
      'a cart has at most 50 lines',
    ],
    [
      'a product id over 100 characters',
      { lines: [{ productId: 'x'.repeat(101), quantity: 1 }] },
      'productId must be at most 100 characters',
    ],
    [
      'an empty product id',
      { lines: [{ productId: '', quantity: 1 }] },
      'productId must not be empty',
    ],
    [
      'a quantity over 1000',
      { lines: [{ productId: 'bookmark', quantity: 1001 }] },
      'quantity must be at most 1000',
    ],
    [
      'a negative quantity',
      { lines: [{ productId: 'bookmark', quantity: -1 }] },
      'quantity must not be negative',
    ],
    [
      'a quantity of 1e300',
      { lines: [{ productId: 'bookmark', quantity: 1e300 }] },
      'quantity must be at most 1000',
    ],
    [
      'an email over 254 characters',
      {
        lines: [{ productId: 'bookmark', quantity: 1 }],
        customerEmail: `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.com`,
      },
      'customerEmail must be at most 254 characters',
    ],
    [
      'a payment method over 99 characters',
      { lines: [{ productId: 'bookmark', quantity: 1 }], paymentMethod: `pm_${'a'.repeat(97)}` },
      'paymentMethod must be at most 99 characters',
    ],
  ])(
    'refuses %s with invalid_input and a clear message, writing nothing',
    async (_label, input, message) => {
      const { api } = h.caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() });
      const error = await api.checkout.pay(input as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TRPCError);
      const cause = (error as TRPCError).cause as {
        code?: string;
        details?: { issues: { message: string }[] };
      };
      expect(cause.code).toBe('invalid_input');
      expect(cause.details!.issues.map((issue) => issue.message)).toContain(message);
      expect(await counts()).toEqual({ payments: 0, jobs: 0, completed: 0 });
    },
  );

  it('refuses a cart mixing currencies', async () => {
    await h.database.client.sql`
      insert into products (tenant_id, id, name, unit_amount, currency)
      values ('tenant_a', 'euro_book', 'Euro book', 1000, 'eur') on conflict do nothing`;
    try {
      const { api } = h.caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() });
      const refused = await refusal(
        api.checkout.pay({
          lines: [
            { productId: 'euro_book', quantity: 1 },
            { productId: 'bookmark', quantity: 1 },
          ],
        }),
      );
      expect(refused.code).toBe('mixed_currency');
      expect(await counts()).toEqual({ payments: 0, jobs: 0, completed: 0 });
    } finally {
      await h.database.client.sql`delete from products where id = 'euro_book'`;
    }
  });

  it('refuses without credentials, with a wrong key, or without an Idempotency-Key', async () => {
    const input = { lines: [{ productId: 'bookmark', quantity: 1 }] };
    expect(await refusal(h.caller({ 'idempotency-key': 'k1' }).api.checkout.pay(input))).toEqual({
      code: 'unauthenticated',
      trpc: 'UNAUTHORIZED',
    });
    expect(
      await refusal(
        h.caller({ authorization: 'Bearer nope', 'idempotency-key': 'k1' }).api.checkout.pay(input),
      ),
    ).toEqual({ code: 'invalid_credentials', trpc: 'UNAUTHORIZED' });
    expect(await refusal(h.caller(bearer('tenant_a')).api.checkout.pay(input))).toEqual({
      code: 'idempotency_key_missing',
      trpc: 'BAD_REQUEST',
    });
    expect(await counts()).toEqual({ payments: 0, jobs: 0, completed: 0 });
  });

  it('writes neither payment nor completed key when the outbox insert fails, and the key can run again', async () => {
    const { sql } = h.database.client;
    // A real failure inside the transaction, after the payment row was inserted.
    await sql.unsafe(`
      create function fail_outbox() returns trigger language plpgsql as $$
      begin raise exception 'outbox unavailable'; end $$;
      create trigger fail_outbox before insert on outbox_jobs for each row execute function fail_outbox();`);
    const key = randomUUID();
    const input = { lines: [{ productId: 'book_pragprog', quantity: 1 }] };
    try {
      const failed = await refusal(
        h.caller({ ...bearer('tenant_a'), 'idempotency-key': key }).api.checkout.pay(input),
      );
      expect(failed.trpc).toBe('INTERNAL_SERVER_ERROR');
      expect(await counts()).toEqual({ payments: 0, jobs: 0, completed: 0 });
      // Atomic mode: the key is only ever written inside the payment's transaction, so the
      // rollback left no key row at all (leased mode would have left it 'released').
      const [row] = await sql`select state from idempotency_keys where key = ${key}`;
      expect(row).toBeUndefined();
    } finally {
      await sql.unsafe('drop trigger fail_outbox on outbox_jobs; drop function fail_outbox();');
    }
    const retried = await h
      .caller({ ...bearer('tenant_a'), 'idempotency-key': key })
      .api.checkout.pay(input);
    expect(retried.amount).toBe(4299);
    expect(await counts()).toEqual({ payments: 1, jobs: 1, completed: 1 });
  });
});
