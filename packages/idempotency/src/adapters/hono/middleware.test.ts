import { sql } from 'drizzle-orm';
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { idempotencyMiddleware } from './middleware.ts';

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('hono');
  await t.sql`create table hono_payments (id serial primary key, tenant text, amount int)`;
});
afterAll(async () => {
  await t?.drop();
});

/** A gate the route waits at, opened by the test: "in flight" without a sleep. */
function gate() {
  let open!: () => void;
  let reached!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const arrived = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const wait = () => {
    reached();
    return opened;
  };
  return { open, arrived, wait };
}

function paymentsApp(hold?: ReturnType<typeof gate>) {
  type Env = { Variables: { tenantId: string } };
  const app = new Hono<Env>();
  app.use(async (c, next) => {
    c.set('tenantId', c.req.header('authorization')?.replace('Bearer ', '') ?? '');
    await next();
  });
  app.post(
    '/payments',
    // No type arguments: the app's typed Variables must type-check as a user writes them.
    idempotencyMiddleware({
      idempotency: createIdempotency({ store: createDrizzleStore(t.db) }),
      operation: 'payments.create',
      getTenantId: (c) => c.get('tenantId'),
    }),
    async (c) => {
      const { amount } = await c.req.json<{ amount: number }>();
      await hold?.wait();
      const exec = c.get('idempotency');
      return t.db.transaction(async (tx) => {
        const [row] = await tx.execute<{ id: number }>(
          sql`insert into hono_payments (tenant, amount) values (${exec.tenantId}, ${amount}) returning id`,
        );
        const response = c.json({ id: row!.id, amount }, 201);
        await exec.complete(tx, response);
        return response;
      });
    },
  );
  return app;
}

/** What the tests use of an app: Hono's in-process `request`. */
type App = { request: (path: string, init: RequestInit) => Response | Promise<Response> };

const pay = (app: App, body: unknown, key?: string) =>
  app.request('/payments', {
    method: 'POST',
    headers: {
      authorization: 'Bearer tenant_a',
      'content-type': 'application/json',
      ...(key ? { 'idempotency-key': key } : {}),
    },
    body: JSON.stringify(body),
  });

describe('idempotencyMiddleware (Hono)', () => {
  it('runs the route once, replays it with Idempotent-Replayed, answers 422 on reuse', async () => {
    const app = paymentsApp();
    const first = await pay(app, { amount: 100 }, 'hono-1');
    expect(first.status).toBe(201);
    const created = (await first.json()) as { id: number; amount: number };
    const replay = await pay(app, { amount: 100 }, 'hono-1');
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual(created);
    const reused = await pay(app, { amount: 999 }, 'hono-1');
    expect(reused.status).toBe(422);
    expect(reused.headers.get('content-type')).toBe('application/problem+json');
    expect(await reused.json()).toMatchObject({ code: 'idempotency_key_reused', status: 422 });
    const missing = await pay(app, { amount: 100 });
    expect(missing.status).toBe(400);
    const [count] = await t.sql`select count(*)::int as n from hono_payments`;
    expect(count?.n).toBe(1);
  });

  it('answers 409 with Retry-After while the first request is in flight, then replays it', async () => {
    const hold = gate();
    const app = paymentsApp(hold);
    const first = pay(app, { amount: 7 }, 'hono-2');
    await hold.arrived;
    const duplicate = await pay(app, { amount: 7 }, 'hono-2');
    expect(duplicate.status).toBe(409);
    expect(Number(duplicate.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await duplicate.json()).toMatchObject({ code: 'idempotency_key_in_use' });
    hold.open();
    expect((await first).status).toBe(201);
    const replay = await pay(app, { amount: 7 }, 'hono-2');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });
  it('an endless SSE route answers in bounded time: refused as unstorable, the key kept unknown', async () => {
    let cancelled = false;
    let runs = 0;
    const app = new Hono();
    app.post(
      '/events',
      idempotencyMiddleware({
        idempotency: createIdempotency({ store: createDrizzleStore(t.db) }),
        operation: 'events.open',
        getTenantId: () => 'tenant_s',
      }),
      (c) => {
        runs++;
        const tick = new TextEncoder().encode('data: tick\n\n');
        const body = new ReadableStream<Uint8Array>({
          pull: (controller) => controller.enqueue(tick),
          cancel: () => {
            cancelled = true;
          },
        });
        return c.body(body, 200, { 'content-type': 'text/event-stream' });
      },
    );
    const open = () =>
      app.request('/events', { method: 'POST', headers: { 'idempotency-key': 'hono-sse' } });
    const first = await open();
    expect(first.status).toBe(500);
    expect(await first.json()).toMatchObject({ code: 'idempotency_result_unstorable' });
    expect(cancelled).toBe(true);
    const retry = await open();
    expect(retry.status).toBe(409);
    expect(await retry.json()).toMatchObject({ code: 'idempotency_outcome_unknown' });
    expect(runs).toBe(1);
  }, 10_000);

  it("a route's throw reaches the engine: a connection lost after the key was written is 409 outcome unknown, a thrown HTTPException is not stored", async () => {
    let runs = 0;
    const app = new Hono();
    app.post(
      '/cut/:how',
      idempotencyMiddleware({
        idempotency: createIdempotency({ store: createDrizzleStore(t.db) }),
        operation: 'payments.cut',
        getTenantId: () => 'tenant_c',
      }),
      async (c) => {
        runs++;
        if (c.req.param('how') === 'refuse') throw new HTTPException(402, { message: 'declined' });
        const exec = c.get('idempotency');
        await t.db.transaction(async (tx) => {
          await exec.complete(tx, c.json({ paid: true }, 201));
          // What the driver throws when the connection dies under the COMMIT: nothing committed.
          throw Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' });
        });
        return c.json({ unreachable: true });
      },
    );
    const post = (how: string, key: string) =>
      app.request(`/cut/${how}`, { method: 'POST', headers: { 'idempotency-key': key } });
    const cut = await post('commit', 'hono-cut');
    expect(cut.status).toBe(409);
    expect(await cut.json()).toMatchObject({ code: 'idempotency_outcome_unknown' });
    expect((await post('refuse', 'hono-refused')).status).toBe(402);
    expect((await post('refuse', 'hono-refused')).status).toBe(402);
    expect(runs).toBe(3);
  });
});
