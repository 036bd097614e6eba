import { initTRPC } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createIdempotency } from '../../core/engine.ts';
import type { TransactionOf } from '../../store/drizzle/drizzle-types.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { createIdempotencyPlugin, type IdempotencyMeta, type TrpcAnswer } from './plugin.ts';

type Context = { tenantId: string; headers: Headers; resHeaders: Headers };
type Tx = TransactionOf<IdempotencyTestDatabase['db']>;

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('trpc_on_answered');
});
afterAll(async () => {
  await t?.drop();
});

function callerWith(onAnswered: (answer: TrpcAnswer, ctx: Context) => unknown) {
  const trpc = initTRPC.context<Context>().meta<IdempotencyMeta>().create();
  const idempotent = createIdempotencyPlugin<Context, Tx>({
    idempotency: createIdempotency({ store: createDrizzleStore(t.db) }),
    getTenantId: (ctx) => ctx.tenantId,
    getRequestHeaders: (ctx) => ctx.headers,
    getResponseHeaders: (ctx) => ctx.resHeaders,
    onAnswered,
  });
  let runs = 0;
  const router = trpc.router({
    pay: trpc.procedure
      .meta({ idempotency: { operation: 'checkout.pay', mode: 'atomic' } })
      .concat(idempotent)
      .input(z.object({ amount: z.number() }))
      .mutation(({ ctx, input }) =>
        t.db.transaction(async (tx) => {
          runs++;
          const result = { paid: input.amount, run: runs };
          await ctx.idempotency.complete(tx, result);
          return result;
        }),
      ),
  });
  const caller = trpc.createCallerFactory(router);
  return (key: string) => {
    const ctx = {
      tenantId: 'acct_a',
      headers: new Headers({ 'idempotency-key': key }),
      resHeaders: new Headers(),
    };
    return { ctx, pay: caller(ctx).pay };
  };
}

describe('createIdempotencyPlugin onAnswered', () => {
  it("tells an executed and a replayed call, with the key, the procedure's result and the context", async () => {
    const heard: [TrpcAnswer, Context][] = [];
    let answered = false;
    const call = callerWith(async (answer, ctx) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      heard.push([answer, ctx]);
      answered = true;
    });
    const first = call('toa-1');
    expect(await first.pay({ amount: 100 })).toEqual({ paid: 100, run: 1 });
    expect(answered).toBe(true);
    const retry = call('toa-1');
    expect(await retry.pay({ amount: 100 })).toEqual({ paid: 100, run: 1 });
    expect(heard.map(([a]) => [a.outcome, a.tenantId, a.operation, a.key, a.data])).toEqual([
      ['executed', 'acct_a', 'checkout.pay', 'toa-1', { paid: 100, run: 1 }],
      ['replayed', 'acct_a', 'checkout.pay', 'toa-1', { paid: 100, run: 1 }],
    ]);
    expect(heard.map(([, ctx]) => ctx)).toEqual([first.ctx, retry.ctx]);
    expect(heard[0]![0].fingerprint).toBe(heard[1]![0].fingerprint);
  });

  it("is told of the key's refusal: a reused key's 422, with its code, the error unchanged", async () => {
    const heard: TrpcAnswer[] = [];
    const call = callerWith((answer) => heard.push(answer));
    await call('toa-2').pay({ amount: 100 });
    await expect(call('toa-2').pay({ amount: 5 })).rejects.toThrow(/idempotency|reused/i);
    expect(heard.map((a) => [a.outcome, a.key, a.refusal, a.data])).toEqual([
      ['executed', 'toa-2', undefined, { paid: 100, run: 1 }],
      ['refused', 'toa-2', 'idempotency_key_reused', undefined],
    ]);
  });

  it('cannot break the answer: what it throws is logged, and the call is answered and replayed as ever', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const call = callerWith(() => Promise.reject(new Error('timeline down')));
    expect(await call('toa-3').pay({ amount: 100 })).toEqual({ paid: 100, run: 1 });
    const retry = call('toa-3');
    expect(await retry.pay({ amount: 100 })).toEqual({ paid: 100, run: 1 });
    expect(retry.ctx.resHeaders.get('idempotent-replayed')).toBe('true');
    expect(logged).toHaveBeenCalledTimes(2);
    logged.mockRestore();
  });
});
