import { initTRPC } from '@trpc/server';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchIdempotency } from '../adapters/fetch/fetch-idempotency.ts';
import { IDEMPOTENCY_KEY_FIELD, idempotentAction } from '../adapters/next/server-action.ts';
import { createIdempotencyPlugin, type IdempotencyMeta } from '../adapters/trpc/plugin.ts';
import { createIdempotency } from '../core/engine.ts';
import { isIdempotencyError } from '../core/errors.ts';
import type { TransactionOf } from '../store/drizzle/drizzle-types.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import { refusal } from '../testing/refusal.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

/**
 * A handler whose transaction committed must never run again for its key, whatever happens to
 * what it returned: a result that is not JSON, a response over `maxResponseBytes`, a second
 * `complete`, a `complete` given the database instead of the transaction.
 */
let t: IdempotencyTestDatabase;
type Tx = TransactionOf<typeof t.db>;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('committed');
  await t.sql`create table effects (key text not null)`;
});
afterAll(async () => {
  await t?.drop();
});

let counter = 0;
const newKey = () => `committed-${++counter}-${Math.random()}`;
const engine = (maxResponseBytes?: number) =>
  createIdempotency<Tx>({ store: createDrizzleStore(t.db), maxResponseBytes });

async function effects(key: string): Promise<number> {
  const [row] = await t.sql`select count(*)::int as n from effects where key = ${key}`;
  return row?.n as number;
}
async function keyState(key: string): Promise<string | undefined> {
  const [row] = await t.sql`select state from idempotency_keys where key = ${key}`;
  return row?.state as string | undefined;
}
/** The handler's own transaction: one effect, committed, and the key NOT completed in it. */
const commitEffect = (key: string) =>
  t.db.transaction(async (tx) => {
    await tx.execute(sql`insert into effects (key) values (${key})`);
  });

describe('a result that cannot be stored after the handler committed', () => {
  it('tRPC: a BigInt result keeps the key (outcome unknown), the retry never runs the procedure again', async () => {
    type Context = { headers: Headers; resHeaders: Headers };
    const trpc = initTRPC.context<Context>().meta<IdempotencyMeta>().create();
    const idempotent = createIdempotencyPlugin({
      idempotency: engine(),
      getTenantId: (_ctx: Context) => 't',
      getRequestHeaders: (ctx) => ctx.headers,
      getResponseHeaders: (ctx) => ctx.resHeaders,
    });
    const router = trpc.router({
      pay: trpc.procedure
        .meta({ idempotency: { operation: 'pay' } })
        .concat(idempotent)
        .mutation(async ({ ctx }) => {
          const key = ctx.idempotency.key as string;
          await commitEffect(key);
          return { amount: 10n }; // normal with superjson; not JSON
        }),
    });
    const key = newKey();
    const call = () =>
      router
        .createCaller({
          headers: new Headers({ 'idempotency-key': key }),
          resHeaders: new Headers(),
        })
        .pay()
        .then(
          () => ({ cause: undefined }),
          (error: { cause?: unknown }) => error,
        );
    const first = await call();
    expect(isIdempotencyError(first.cause, 'idempotency_result_unstorable')).toBe(true);
    const retry = await call();
    expect(isIdempotencyError(retry.cause, 'idempotency_outcome_unknown')).toBe(true);
    expect(await effects(key)).toBe(1);
    expect(await keyState(key)).toBe('unknown');
  });

  it('Server Action: a BigInt result keeps the key, the retry gets { ok: false } 409, one effect', async () => {
    const buy = idempotentAction(
      async (exec, _form: FormData) => {
        await commitEffect(exec.key as string);
        return { amount: 10n };
      },
      { idempotency: engine(), operation: 'buy', getTenantId: () => 't' },
    );
    const key = newKey();
    const form = new FormData();
    form.set(IDEMPOTENCY_KEY_FIELD, key);
    const first = await buy(form);
    expect(first).toMatchObject({ ok: false, code: 'idempotency_result_unstorable', status: 500 });
    const retry = await buy(form);
    expect(retry).toMatchObject({ ok: false, code: 'idempotency_outcome_unknown', status: 409 });
    expect(await effects(key)).toBe(1);
  });

  it('fetch: a response over maxResponseBytes keeps the key, the retry gets 409, one effect', async () => {
    const http = fetchIdempotency(engine(1024));
    const key = newKey();
    const send = () =>
      http.handle(
        new Request('http://x/pay', { method: 'POST', headers: { 'idempotency-key': key } }),
        { tenantId: 't', operation: 'pay' },
        async () => {
          await commitEffect(key);
          return new Response('x'.repeat(4096), { status: 201 });
        },
      );
    const first = await send();
    expect(first.status).toBe(500);
    expect((await first.json()).code).toBe('idempotency_response_too_large');
    const retry = await send();
    expect(retry.status).toBe(409);
    expect((await retry.json()).code).toBe('idempotency_outcome_unknown');
    expect(await effects(key)).toBe(1);
  });

  it('the engine: a StoredResponse over the cap returned after a commit keeps the key', async () => {
    const idempotency = engine(64);
    const key = newKey();
    const run = () =>
      idempotency.execute({ tenantId: 't', operation: 'pay', key, fingerprint: 'fp' }, async () => {
        await commitEffect(key);
        return { status: 200, headers: {}, body: 'y'.repeat(1000) };
      });
    expect((await refusal(run())).code).toBe('idempotency_response_too_large');
    expect((await refusal(run())).code).toBe('idempotency_outcome_unknown');
    expect(await effects(key)).toBe(1);
  });

  it('a result that cannot be stored, found INSIDE the transaction, rolls it back and leaves the key free', async () => {
    const idempotency = engine(64);
    const key = newKey();
    let runs = 0;
    const run = (body: string) =>
      idempotency.execute({ tenantId: 't', operation: 'pay', key, fingerprint: 'fp' }, (exec) =>
        t.db.transaction(async (tx) => {
          runs++;
          await tx.execute(sql`insert into effects (key) values (${key})`);
          const response = { status: 200, headers: {}, body };
          await exec.complete(tx, response);
          return response;
        }),
      );
    expect((await refusal(run('y'.repeat(1000)))).code).toBe('idempotency_response_too_large');
    expect(await effects(key)).toBe(0);
    expect((await run('ok')).kind).toBe('executed');
    expect([runs, await effects(key)]).toEqual([2, 1]);
  });
});

describe('complete called twice', () => {
  const response = { status: 201, headers: {}, body: '{"paid":true}' };

  for (const mode of ['leased', 'atomic'] as const) {
    it(`${mode}: twice in one transaction says so, writes nothing more, and leaves the key usable`, async () => {
      const idempotency = engine();
      const key = newKey();
      const request = { tenantId: 't', operation: 'pay', key, fingerprint: 'fp', policy: { mode } };
      let runs = 0;
      const twice = await refusal(
        idempotency.execute(request, (exec) =>
          t.db.transaction(async (tx) => {
            runs++;
            await tx.execute(sql`insert into effects (key) values (${key})`);
            await exec.complete(tx, response);
            await exec.complete(tx, response);
            return response;
          }),
        ),
      );
      expect(twice.code).toBe('idempotency_already_completed');
      // The error rolled the transaction back: no effect, and the key is free at once (not held
      // for a lease), so the corrected handler runs.
      expect(await effects(key)).toBe(0);
      const again = await idempotency.execute(request, (exec) =>
        t.db.transaction(async (tx) => {
          runs++;
          await tx.execute(sql`insert into effects (key) values (${key})`);
          await exec.complete(tx, response);
          return response;
        }),
      );
      expect([again.kind, runs, await effects(key)]).toEqual(['executed', 2, 1]);
    });
  }

  it('leased: again after the first completion committed: the first stands and is replayed', async () => {
    const idempotency = engine();
    const key = newKey();
    const request = { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' };
    const error = await refusal(
      idempotency.execute(request, async (exec) => {
        await t.db.transaction(async (tx) => {
          await tx.execute(sql`insert into effects (key) values (${key})`);
          await exec.complete(tx, response);
        });
        await t.db.transaction((tx) => exec.complete(tx, { ...response, body: '{"other":1}' }));
        return response;
      }),
    );
    expect(error.code).toBe('idempotency_already_completed');
    expect(await keyState(key)).toBe('completed');
    const replay = await idempotency.execute(request, async () => {
      throw new Error('must not run');
    });
    expect([replay.kind, replay.response.body]).toEqual(['replayed', response.body]);
    expect(await effects(key)).toBe(1);
  });
});

describe('complete given the database instead of the transaction', () => {
  for (const mode of ['leased', 'atomic'] as const) {
    it(`${mode}: refused before writing; the business transaction rolls back and nothing claims it succeeded`, async () => {
      const idempotency = engine();
      const key = newKey();
      const request = { tenantId: 't', operation: 'pay', key, fingerprint: 'fp', policy: { mode } };
      const response = { status: 201, headers: {}, body: '{"paid":true}' };
      const error = await refusal(
        idempotency.execute(request, (exec) =>
          t.db.transaction(async (tx) => {
            await tx.execute(sql`insert into effects (key) values (${key})`);
            // What `complete(db, result)` compiles to where the transaction type is unknown.
            await exec.complete(t.db as unknown as Tx, response);
            return response;
          }),
        ),
      );
      expect(error.code).toBe('idempotency_complete_outside_transaction');
      expect(await effects(key)).toBe(0);
      expect(await keyState(key)).not.toBe('completed');
    });
  }
});

describe('the transaction type reaches complete in the documented setups', () => {
  it('complete(db, ...) does not compile: tRPC (the quickstart setup), Server Action, fetch', () => {
    // Type-checked by `tsc`, never run: each `@ts-expect-error` fails the type check if the
    // call it marks compiles.
    const typeOnly = () => {
      type Context = { tenantId: string; headers: Headers; resHeaders: Headers };
      const trpc = initTRPC.context<Context>().meta<IdempotencyMeta>().create();
      const idempotent = createIdempotencyPlugin({
        idempotency: engine(),
        getTenantId: (ctx: Context) => ctx.tenantId,
        getRequestHeaders: (ctx) => ctx.headers,
      });
      // The context alone would leave the transaction type `unknown`: refused, give both.
      // @ts-expect-error Expected 2 type arguments
      createIdempotencyPlugin<Context>({ idempotency: engine(), getTenantId: () => 't' });
      trpc.procedure
        .meta({ idempotency: { operation: 'pay' } })
        .concat(idempotent)
        .mutation(async ({ ctx }) => {
          await t.db.transaction((tx) => ctx.idempotency.complete(tx, { paid: true }));
          // @ts-expect-error the database is not the transaction
          await ctx.idempotency.complete(t.db, { paid: true });
        });
      idempotentAction(
        async (exec) => {
          await t.db.transaction((tx) => exec.complete(tx, { paid: true }));
          // @ts-expect-error the database is not the transaction
          await exec.complete(t.db, { paid: true });
        },
        { idempotency: engine(), operation: 'pay', getTenantId: () => 't' },
      );
      fetchIdempotency(engine()).handle(
        new Request('http://x'),
        { tenantId: 't', operation: 'pay' },
        async (exec) => {
          const response = new Response('ok');
          // @ts-expect-error the database is not the transaction
          await exec.complete(t.db, response);
          return response;
        },
      );
    };
    expect(typeof typeOnly).toBe('function');
  });
});

describe('advance given the database instead of the transaction', () => {
  it('is refused before writing: the recovery point never runs ahead of a rolled-back phase', async () => {
    const idempotency = engine();
    const key = newKey();
    const error = await refusal(
      idempotency.execute({ tenantId: 't', operation: 'pay', key, fingerprint: 'fp' }, (exec) =>
        t.db.transaction(async (tx) => {
          await tx.execute(sql`insert into effects (key) values (${key})`);
          await exec.advance(t.db as unknown as Tx, 'charged');
          return { status: 200, headers: {}, body: null };
        }),
      ),
    );
    expect(error.code).toBe('idempotency_complete_outside_transaction');
    const [row] =
      await t.sql`select state, recovery_point from idempotency_keys where key = ${key}`;
    expect(row).toEqual({ state: 'released', recovery_point: 'started' });
    expect(await effects(key)).toBe(0);
  });
});
