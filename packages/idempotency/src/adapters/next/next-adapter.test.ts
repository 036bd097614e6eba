import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { idempotentRouteHandler } from './route-handler.ts';
import { IDEMPOTENCY_KEY_FIELD, idempotentAction } from './server-action.ts';

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('next');
  await t.sql`create table orders (id serial primary key, tenant_id text not null, sku text not null)`;
});
afterAll(async () => {
  await t?.drop();
});

function form(fields: Record<string, string>): FormData {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.set(name, value);
  return data;
}

describe('idempotentAction (Server Actions)', () => {
  const idempotency = () => createIdempotency({ store: createDrizzleStore(t.db) });
  let tenant = 'tenant-a';
  const makePlaceOrder = () =>
    idempotentAction(
      async (exec, data: FormData) =>
        t.db.transaction(async (tx) => {
          const rows = await tx.execute<{ id: number }>(
            sql`insert into orders (tenant_id, sku) values (${exec.tenantId}, ${String(data.get('sku'))}) returning id`,
          );
          const order = { orderId: rows[0]!.id, sku: String(data.get('sku')) };
          await exec.complete(tx, order);
          return order;
        }),
      { idempotency: idempotency(), operation: 'orders.place', getTenantId: () => tenant },
    );
  let placeOrder: ReturnType<typeof makePlaceOrder>;
  beforeAll(() => {
    placeOrder = makePlaceOrder();
  });

  it('runs once per form key: the retry gets the stored result, another cart a 422', async () => {
    const first = await placeOrder(form({ [IDEMPOTENCY_KEY_FIELD]: 'k1', sku: 'book' }));
    expect(first).toMatchObject({ ok: true, replayed: false, data: { sku: 'book' } });
    const retry = await placeOrder(form({ [IDEMPOTENCY_KEY_FIELD]: 'k1', sku: 'book' }));
    expect(retry).toEqual({ ok: true, replayed: true, data: first.ok && first.data });
    const reused = await placeOrder(form({ [IDEMPOTENCY_KEY_FIELD]: 'k1', sku: 'lamp' }));
    expect(reused).toMatchObject({ ok: false, code: 'idempotency_key_reused', status: 422 });
    const [row] = await t.sql`select count(*)::int as n from orders`;
    expect(row?.n).toBe(1);
  });

  it('scopes the key by the session tenant, never by the form', async () => {
    tenant = 'tenant-b';
    const other = await placeOrder(
      form({ [IDEMPOTENCY_KEY_FIELD]: 'k1', sku: 'book', tenantId: 'tenant-a' }),
    );
    tenant = 'tenant-a';
    expect(other).toMatchObject({ ok: true, replayed: false });
  });

  it('answers 409 with Retry-After to a duplicate while the first still runs', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const running = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const slow = idempotentAction(
      async (_exec, _key: string, amount: number) => {
        entered();
        await held;
        return { amount };
      },
      {
        idempotency: idempotency(),
        operation: 'slow',
        getTenantId: () => 'tenant-a',
        // Called as (key, amount): the app says where its key is.
        getKey: (key) => key,
      },
    );
    const first = slow('k-slow', 5);
    await running;
    const duplicate = await slow('k-slow', 5);
    expect(duplicate).toMatchObject({ ok: false, code: 'idempotency_key_in_use', status: 409 });
    expect(duplicate.ok || duplicate.retryAfterSeconds).toBeGreaterThan(0);
    release();
    expect(await first).toEqual({ ok: true, replayed: false, data: { amount: 5 } });
    expect(await slow('k-slow', 5)).toEqual({ ok: true, replayed: true, data: { amount: 5 } });
  });

  it('refuses a call without a key (400 idempotency_key_missing) naming the form field, and runs nothing', async () => {
    const missing = await placeOrder(form({ sku: 'book' }));
    expect(missing).toMatchObject({ ok: false, code: 'idempotency_key_missing', status: 400 });
    // A Server Action has no request headers to fix: say where its key is read from.
    expect(missing.ok || missing.message).toMatch(/"idempotency-key" form field/);
    expect(missing.ok || missing.message).not.toMatch(/header/i);
  });
});

describe('idempotentRouteHandler (app router)', () => {
  it("hands the route's context to the handler and replays with Idempotent-Replayed", async () => {
    let runs = 0;
    const POST = idempotentRouteHandler(
      async (_request, _exec, context: { params: Promise<{ shop: string }> }) => {
        runs++;
        return Response.json({ shop: (await context.params).shop, runs }, { status: 201 });
      },
      {
        idempotency: createIdempotency({ store: createDrizzleStore(t.db) }),
        operation: 'orders.route',
        getTenantId: () => 'tenant-a',
      },
    );
    const request = () =>
      new Request('http://test/api/orders/s1', {
        method: 'POST',
        headers: { 'idempotency-key': 'r1', 'content-type': 'application/json' },
        body: '{"sku":"book"}',
      });
    const context = { params: Promise.resolve({ shop: 's1' }) };
    const first = await POST(request(), context);
    expect(first.status).toBe(201);
    const replay = await POST(request(), context);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual({ shop: 's1', runs: 1 });
    expect(runs).toBe(1);
  });
});
