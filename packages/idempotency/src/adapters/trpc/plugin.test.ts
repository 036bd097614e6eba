import { initTRPC, TRPCError } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createIdempotency } from '../../core/engine.ts';
import { AmbiguousOutcomeError } from '../../core/errors.ts';
import type { TransactionOf } from '../../store/drizzle/drizzle-types.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { idempotencyErrorFormatter } from './error-formatter.ts';
import { createIdempotencyPlugin, type IdempotencyMeta } from './plugin.ts';
import { replayMiddlewareResult } from './replay-result.ts';

type Context = { tenantId: string; headers: Headers; resHeaders: Headers };
type Tx = TransactionOf<IdempotencyTestDatabase['db']>;

let t: IdempotencyTestDatabase;
let handle: (request: Request) => Promise<Response>;
const runs = {
  pay: 0,
  decline: 0,
  refuse: 0,
  crash: 0,
  ambiguous: 0,
  atomicPay: 0,
  atomicDecline: 0,
};
let openGate!: () => void;
const gate = new Promise<void>((resolve) => {
  openGate = resolve;
});

beforeAll(async () => {
  t = await createIdempotencyTestDatabase('trpc');
  await t.sql`create table payments (tenant_id text, cart_id text, amount int)`;
  const db = t.db;
  const idempotency = createIdempotency({ store: createDrizzleStore(db) });
  const trpc = initTRPC
    .context<Context>()
    .meta<IdempotencyMeta>()
    .create({ errorFormatter: idempotencyErrorFormatter });
  const idempotent = createIdempotencyPlugin<Context, Tx>({
    // The engine may also come from the context (one engine per deployment/database).
    idempotency: (ctx) => (ctx.tenantId ? idempotency : idempotency),
    getTenantId: (ctx) => ctx.tenantId,
    getRequestHeaders: (ctx) => ctx.headers,
    getResponseHeaders: (ctx) => ctx.resHeaders,
    // Refused input is not an outcome: the client may fix it and resend under the same key.
    errorOutcome: (error) => (error.code === 'BAD_REQUEST' ? 'release' : 'store'),
  });
  const router = trpc.router({
    pay: trpc.procedure
      .meta({ idempotency: { operation: 'checkout.pay' } })
      .concat(idempotent)
      .input(z.object({ cartId: z.string(), amount: z.number() }))
      .mutation(({ ctx, input }) =>
        db.transaction(async (tx) => {
          runs.pay++;
          await tx.execute(
            sql`insert into payments values (${ctx.tenantId}, ${input.cartId}, ${input.amount})`,
          );
          const result = { paid: input.amount, run: runs.pay };
          await ctx.idempotency.complete(tx, result);
          return result;
        }),
      ),
    atomicPay: trpc.procedure
      .meta({ idempotency: { operation: 'checkout.atomic_pay', mode: 'atomic' } })
      .concat(idempotent)
      .input(z.object({ cartId: z.string(), amount: z.number() }))
      .mutation(({ ctx, input }) =>
        db.transaction(async (tx) => {
          runs.atomicPay++;
          await tx.execute(
            sql`insert into payments values (${ctx.tenantId}, ${input.cartId}, ${input.amount})`,
          );
          await tx.execute(sql`select pg_sleep(0.02)`);
          const result = { paid: input.amount, cartId: input.cartId };
          await ctx.idempotency.complete(tx, result);
          return result;
        }),
      ),
    atomicForgetful: trpc.procedure
      .meta({ idempotency: { operation: 'checkout.atomic_forgetful', mode: 'atomic' } })
      .concat(idempotent)
      .mutation(() => ({ forgot: true })),
    atomicDecline: trpc.procedure
      .meta({ idempotency: { operation: 'checkout.atomic_decline', mode: 'atomic' } })
      .concat(idempotent)
      .mutation(() => {
        runs.atomicDecline++;
        throw new TRPCError({ code: 'PAYMENT_REQUIRED', message: 'card_declined' });
      }),
    decline: trpc.procedure
      .meta({ idempotency: { operation: 'checkout.decline' } })
      .concat(idempotent)
      .mutation(() => {
        runs.decline++;
        throw new TRPCError({ code: 'PAYMENT_REQUIRED', message: 'card_declined' });
      }),
    refuse: trpc.procedure
      .meta({ idempotency: { operation: 'checkout.refuse' } })
      .concat(idempotent)
      .mutation(() => {
        runs.refuse++;
        throw new TRPCError({ code: 'BAD_REQUEST', message: 'empty_cart' });
      }),
    crash: trpc.procedure
      .meta({ idempotency: { operation: 'checkout.crash' } })
      .concat(idempotent)
      .mutation(() => {
        runs.crash++;
        throw new Error('downstream 500');
      }),
    // A downstream call that may or may not have happened: the handler says so.
    ambiguous: trpc.procedure
      .meta({ idempotency: { operation: 'checkout.ambiguous' } })
      .concat(idempotent)
      .mutation(() => {
        runs.ambiguous++;
        throw new AmbiguousOutcomeError('charge timed out');
      }),
    slow: trpc.procedure
      .meta({ idempotency: { operation: 'slow' } })
      .concat(idempotent)
      .mutation(async () => {
        await gate;
        return { slow: true };
      }),
    optional: trpc.procedure
      .meta({ idempotency: { operation: 'optional', required: false } })
      .concat(idempotent)
      .mutation(({ ctx }) => ({ active: ctx.idempotency.active })),
  });
  handle = (request) =>
    fetchRequestHandler({
      endpoint: '/trpc',
      req: request,
      router,
      createContext: ({ req, resHeaders }) => ({
        tenantId: req.headers.get('x-tenant') ?? 'anon',
        headers: req.headers,
        resHeaders,
      }),
    });
});
afterAll(async () => {
  await t?.drop();
});

function call(path: string, input: unknown, headers: Record<string, string> = {}) {
  return handle(
    new Request(`http://test/trpc/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tenant': 'tenant-a', ...headers },
      body: JSON.stringify(input),
    }),
  );
}

interface TrpcJson {
  error: {
    message: string;
    data: { code: string; idempotency: { code: string; retryAfterSeconds: number | null } };
  };
  result: { data: unknown };
}
const readJson = (response: Response) => response.json() as Promise<TrpcJson>;

describe('tRPC idempotency plugin', () => {
  it('runs once with the response committed in the handler transaction, then replays with Idempotent-Replayed', async () => {
    const first = await call(
      'pay',
      { cartId: 'c1', amount: 100 },
      { 'idempotency-key': '"k-pay-1"' },
    );
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const firstBody = await readJson(first);
    const second = await call(
      'pay',
      { amount: 100, cartId: 'c1' },
      { 'idempotency-key': 'k-pay-1' },
    );
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await readJson(second)).toEqual(firstBody);
    expect(runs.pay).toBe(1);
    expect(await t.sql`select * from payments where cart_id = 'c1'`).toHaveLength(1);
  });

  it('maps reuse with another input to UNPROCESSABLE_CONTENT with data.idempotency', async () => {
    await call('pay', { cartId: 'c2', amount: 1 }, { 'idempotency-key': 'k-pay-2' });
    const reused = await call('pay', { cartId: 'c2', amount: 2 }, { 'idempotency-key': 'k-pay-2' });
    expect(reused.status).toBe(422);
    const body = await readJson(reused);
    expect(body.error.data.code).toBe('UNPROCESSABLE_CONTENT');
    expect(body.error.data.idempotency).toEqual({
      code: 'idempotency_key_reused',
      retryAfterSeconds: null,
    });
  });

  it('maps missing and invalid keys to BAD_REQUEST', async () => {
    const missing = await call('pay', { cartId: 'c3', amount: 1 });
    expect(missing.status).toBe(400);
    expect((await readJson(missing)).error.data.idempotency.code).toBe('idempotency_key_missing');
    const invalid = await call(
      'pay',
      { cartId: 'c3', amount: 1 },
      { 'idempotency-key': 'x'.repeat(300) },
    );
    expect((await readJson(invalid)).error.data.idempotency.code).toBe('idempotency_key_invalid');
  });

  it('keys are per tenant: the same key from another tenant runs separately', async () => {
    await call('pay', { cartId: 'c4', amount: 1 }, { 'idempotency-key': 'shared' });
    const other = await call(
      'pay',
      { cartId: 'c4', amount: 1 },
      { 'idempotency-key': 'shared', 'x-tenant': 'tenant-b' },
    );
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    expect(
      await t.sql`select tenant_id from payments where cart_id = 'c4' order by tenant_id`,
    ).toEqual([{ tenant_id: 'tenant-a' }, { tenant_id: 'tenant-b' }]);
  });

  it('stores a deliberate 4xx TRPCError and replays the same error; a 5xx releases the key', async () => {
    const first = await call('decline', null, { 'idempotency-key': 'k-decline' });
    const second = await call('decline', null, { 'idempotency-key': 'k-decline' });
    expect(first.status).toBe(402);
    expect(second.status).toBe(402);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect((await readJson(second)).error.message).toBe('card_declined');
    expect(runs.decline).toBe(1);

    await call('crash', null, { 'idempotency-key': 'k-crash' });
    const again = await call('crash', null, { 'idempotency-key': 'k-crash' });
    expect(again.status).toBe(500);
    expect(runs.crash).toBe(2);
  });

  it('our own signal thrown in a procedure reaches the engine through tRPC: an ambiguous outcome keeps the key unknown, the retry does not run', async () => {
    const first = await call('ambiguous', null, { 'idempotency-key': 'k-ambiguous' });
    const retry = await call('ambiguous', null, { 'idempotency-key': 'k-ambiguous' });
    expect((await readJson(first)).error.data.idempotency.code).toBe('idempotency_outcome_unknown');
    expect(retry.status).toBe(409);
    expect((await readJson(retry)).error.data.idempotency.code).toBe('idempotency_outcome_unknown');
    // Released instead, the retry would have run the downstream call a second time.
    expect(runs.ambiguous).toBe(1);
  });

  it('errorOutcome "release": a refused 4xx is not stored and the same key runs again', async () => {
    const first = await call('refuse', null, { 'idempotency-key': 'k-refuse' });
    const second = await call('refuse', null, { 'idempotency-key': 'k-refuse' });
    expect(first.status).toBe(400);
    expect(second.status).toBe(400);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(runs.refuse).toBe(2);
  });

  it('answers CONFLICT with Retry-After and data.idempotency while the first call runs', async () => {
    const first = call('slow', null, { 'idempotency-key': 'k-slow' });
    await expect
      .poll(
        async () =>
          (await t.sql`select state from idempotency_keys where key = 'k-slow'`)[0]?.state,
      )
      .toBe('in_progress');
    const busy = await call('slow', null, { 'idempotency-key': 'k-slow' });
    expect(busy.status).toBe(409);
    expect(Number(busy.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = await readJson(busy);
    expect(body.error.data.code).toBe('CONFLICT');
    expect(body.error.data.idempotency.code).toBe('idempotency_key_in_use');
    expect(body.error.data.idempotency.retryAfterSeconds).toBe(
      Number(busy.headers.get('retry-after')),
    );
    openGate();
    expect((await (await first).json()) as unknown).toEqual({ result: { data: { slow: true } } });
  });

  it('with required: false, a call without a key runs unguarded and one with a key is guarded', async () => {
    const optional = await call('optional', null);
    expect((await readJson(optional)).result.data).toEqual({ active: false });
    const withKey = await call('optional', null, { 'idempotency-key': 'k-opt' });
    expect((await readJson(withKey)).result.data).toEqual({ active: true });
  });

  it('replayMiddlewareResult builds the shape tRPC accepts as a middleware result (trpc/trpc#4066)', async () => {
    const trpc = initTRPC.create();
    const answered = trpc.procedure
      .use(async (opts) =>
        replayMiddlewareResult<Awaited<ReturnType<typeof opts.next>>>({ from: 'replay' }),
      )
      .query(() => ({ from: 'handler' }));
    const caller = trpc.createCallerFactory(trpc.router({ answered }))({});
    expect(await caller.answered()).toEqual({ from: 'replay' });
  });

  it('atomic mode: 20 concurrent calls with one key pay once; every other call is a replay of the same result', async () => {
    const before = runs.atomicPay;
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        call('atomicPay', { cartId: 'atomic-cart', amount: 7 }, { 'idempotency-key': 'atomic-k1' }),
      ),
    );
    const bodies = (await Promise.all(responses.map((r) => r.json()))) as Array<{
      result: { data: unknown };
    }>;
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200));
    for (const body of bodies) expect(body.result.data).toEqual({ paid: 7, cartId: 'atomic-cart' });
    expect(responses.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(
      19,
    );
    const [row] =
      await t.sql`select count(*)::int as n from payments where cart_id = 'atomic-cart'`;
    expect(row?.n).toBe(1);
    // Besides the winner, duplicates ran the procedure and lost on the primary key (their
    // payment rolled back): more than one run, yet one payment. (>= 1 the winner alone meets.)
    expect(runs.atomicPay - before).toBeGreaterThan(1);
    const reused = await call(
      'atomicPay',
      { cartId: 'atomic-cart', amount: 8 },
      { 'idempotency-key': 'atomic-k1' },
    );
    expect(reused.status).toBe(422);
  });

  it('atomic mode: a procedure that returns without complete() fails with 500 and stores nothing; a 4xx is not stored', async () => {
    const forgot = await call('atomicForgetful', {}, { 'idempotency-key': 'atomic-forgot' });
    expect(forgot.status).toBe(500);
    const [row] =
      await t.sql`select count(*)::int as n from idempotency_keys where key = 'atomic-forgot'`;
    expect(row?.n).toBe(0);
    const first = await call('atomicDecline', {}, { 'idempotency-key': 'atomic-decline' });
    const second = await call('atomicDecline', {}, { 'idempotency-key': 'atomic-decline' });
    expect([first.status, second.status]).toEqual([402, 402]);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(runs.atomicDecline).toBe(2);
  });
});
