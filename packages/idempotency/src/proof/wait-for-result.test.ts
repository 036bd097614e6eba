import { initTRPC } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import fc from 'fast-check';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { storedResponseFrom } from '../adapters/fetch/stored-response.ts';
import { withIdempotency } from '../adapters/fetch/with-idempotency.ts';
import { idempotencyErrorFormatter } from '../adapters/trpc/error-formatter.ts';
import { createIdempotencyPlugin, type IdempotencyMeta } from '../adapters/trpc/plugin.ts';
import { createIdempotency } from '../core/engine.ts';
import type { IdempotencyOptions } from '../core/engine-context.ts';
import { AmbiguousOutcomeError } from '../core/errors.ts';
import type { Execution } from '../core/execution.ts';
import type { IdempotencyEvent, StoredResponse } from '../core/types.ts';
import type { TransactionOf } from '../store/drizzle/drizzle-types.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import { refusal } from '../testing/refusal.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

const DUPLICATES = 20;

type Tx = TransactionOf<typeof t.db>;
let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('wait_for_result', DUPLICATES + 10);
  await t.sql`create table effects (key text, run int)`;
});
afterAll(async () => {
  await t?.drop();
});

let counter = 0;
const newKey = () => `wait-${++counter}-${Math.random()}`;
const effects = async (key: string) =>
  Number((await t.sql`select count(*)::int as n from effects where key = ${key}`)[0]?.n);

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  let entered!: () => void;
  const entry = new Promise<void>((resolve) => {
    entered = resolve;
  });
  return { open, opened, entered, entry };
}

function engine(extra: Partial<IdempotencyOptions<Tx>> = {}, db = t.db) {
  const events: IdempotencyEvent[] = [];
  const idempotency = createIdempotency<Tx>({
    store: createDrizzleStore(db) as never,
    onEvent: (e) => events.push(e),
    ...extra,
  });
  return { idempotency, events };
}

const WAIT = { waitForResult: { timeoutMs: 10_000 } } as const;

describe('waitForResult (leased mode)', () => {
  it('fetch: N concurrent duplicates while a gate holds the first: one execution, every answer the same body, the others Idempotent-Replayed', async () => {
    const key = newKey();
    const held = gate();
    let runs = 0;
    // Two engines, as two processes: waiters of the second are woken by polling only.
    const engines = [engine().idempotency, engine().idempotency];
    const handlers = engines.map((idempotency) =>
      withIdempotency<Tx>(
        async (request, exec) => {
          const run = ++runs;
          held.entered();
          await held.opened;
          const body = await request.text();
          return t.db.transaction(async (tx) => {
            await tx.execute(sql`insert into effects values (${key}, ${run})`);
            const response = Response.json({ run, body }, { status: 201 });
            await exec.complete(tx as Tx, await storedResponseFrom(response));
            return response;
          });
        },
        { idempotency, operation: 'pay', getTenantId: () => 'tenant', policy: WAIT },
      ),
    );
    const request = () =>
      new Request('http://test/pay', {
        method: 'POST',
        headers: { 'idempotency-key': key, 'content-type': 'application/json' },
        body: '{"cart":"c1"}',
      });
    const first = handlers[0]?.(request()) as Promise<Response>;
    await held.entry;
    const duplicates = Array.from({ length: DUPLICATES }, (_, i) =>
      (handlers[i % 2] as (r: Request) => Promise<Response>)(request()),
    );
    // The duplicates are all waiting now (none could run: the first holds the key).
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(runs).toBe(1);
    held.open();
    const answers = await Promise.all([first, ...duplicates]);
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 201));
    const bodies = await Promise.all(answers.map((r) => r.text()));
    expect(new Set(bodies)).toEqual(new Set(['{"run":1,"body":"{\\"cart\\":\\"c1\\"}"}']));
    expect(answers.map((r) => r.headers.get('idempotent-replayed'))).toEqual([
      null,
      ...duplicates.map(() => 'true'),
    ]);
    expect(runs).toBe(1);
    expect(await effects(key)).toBe(1);
  });

  it('tRPC: 10 concurrent duplicates wait and get the replay with Idempotent-Replayed instead of 409; one execution', async () => {
    type Context = { tenantId: string; headers: Headers; resHeaders: Headers };
    const { idempotency } = engine();
    const trpc = initTRPC
      .context<Context>()
      .meta<IdempotencyMeta>()
      .create({ errorFormatter: idempotencyErrorFormatter });
    const idempotent = createIdempotencyPlugin<Context, Tx>({
      idempotency,
      getTenantId: (ctx) => ctx.tenantId,
      getRequestHeaders: (ctx) => ctx.headers,
      getResponseHeaders: (ctx) => ctx.resHeaders,
    });
    let held = gate();
    let runs = 0;
    const payProcedure = (meta: IdempotencyMeta['idempotency']) =>
      trpc.procedure
        .meta({ idempotency: meta })
        .concat(idempotent)
        .input(z.object({ cartId: z.string() }))
        .mutation(async ({ ctx, input }) => {
          const run = ++runs;
          held.entered();
          await held.opened;
          return t.db.transaction(async (tx) => {
            const result = { cartId: input.cartId, run };
            await ctx.idempotency.complete(tx as Tx, result);
            return result;
          });
        });
    const router = trpc.router({
      pay: payProcedure({ operation: 'trpc.pay', waitForResult: { timeoutMs: 10_000 } }),
      payNow: payProcedure({ operation: 'trpc.pay_now' }),
    });
    const call = (path: string, key: string) =>
      fetchRequestHandler({
        endpoint: '/trpc',
        router,
        req: new Request(`http://test/trpc/${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ cartId: 'c1' }),
        }),
        createContext: ({ req, resHeaders }) => ({
          tenantId: 'tenant',
          headers: req.headers,
          resHeaders,
        }),
      });

    const key = newKey();
    const first = call('pay', key);
    await held.entry;
    const duplicates = Array.from({ length: 10 }, () => call('pay', key));
    await new Promise((resolve) => setTimeout(resolve, 100));
    held.open();
    const [a, ...others] = await Promise.all([first, ...duplicates]);
    expect([a, ...others].map((r) => r?.status)).toEqual(Array(11).fill(200));
    expect(a?.headers.get('idempotent-replayed')).toBeNull();
    expect(others.map((r) => r.headers.get('idempotent-replayed'))).toEqual(Array(10).fill('true'));
    const body = await a?.text();
    expect(await Promise.all(others.map((r) => r.text()))).toEqual(Array(10).fill(body));
    expect(runs).toBe(1);

    // Without the policy the same race answers 409 at once (the behaviour waiting replaces).
    const other = gate();
    held = other;
    const keyNow = newKey();
    const firstNow = call('payNow', keyNow);
    await other.entry;
    const conflict = await call('payNow', keyNow);
    expect(conflict.status).toBe(409);
    expect(conflict.headers.get('retry-after')).not.toBeNull();
    other.open();
    expect((await firstNow).status).toBe(200);
  });

  it('past the bound a waiter gets the usual 409 with Retry-After, not before', async () => {
    const { idempotency } = engine();
    const key = newKey();
    const held = gate();
    const request = { tenantId: 'tenant', operation: 'pay', key, fingerprint: 'fp' };
    const first = idempotency.execute(request, async () => {
      held.entered();
      await held.opened;
      return { status: 200, headers: {}, body: '"first"' };
    });
    await held.entry;
    const started = performance.now();
    const refused = await refusal(
      idempotency.execute({ ...request, policy: { waitForResult: { timeoutMs: 300 } } }, () =>
        Promise.resolve({ status: 200, headers: {}, body: '"never"' }),
      ),
    );
    const waitedMs = performance.now() - started;
    expect(refused.code).toBe('idempotency_key_in_use');
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(waitedMs).toBeGreaterThanOrEqual(295);
    expect(waitedMs).toBeLessThan(2_000);
    held.open();
    expect((await first).kind).toBe('executed');
  });

  it('a key released by a first request that failed before any side effect is taken over by exactly one waiter; the others replay its result', async () => {
    const { idempotency } = engine();
    const key = newKey();
    const held = gate();
    let runs = 0;
    const request = { tenantId: 'tenant', operation: 'pay', key, fingerprint: 'fp', policy: WAIT };
    const handler = async (): Promise<StoredResponse> => {
      const run = ++runs;
      if (run === 1) {
        held.entered();
        await held.opened;
        return { status: 503, headers: {}, body: '"downstream down"' }; // never stored: released
      }
      return { status: 201, headers: {}, body: JSON.stringify({ run }) };
    };
    const first = idempotency.execute(request, handler);
    await held.entry;
    const waiters = Array.from({ length: 8 }, () => idempotency.execute(request, handler));
    await new Promise((resolve) => setTimeout(resolve, 50));
    held.open();
    expect((await first).response.status).toBe(503);
    const outcomes = await Promise.all(waiters);
    expect(runs).toBe(2);
    expect(outcomes.filter((o) => o.kind === 'executed')).toHaveLength(1);
    expect(outcomes.filter((o) => o.kind === 'replayed')).toHaveLength(7);
    expect(new Set(outcomes.map((o) => o.response.body))).toEqual(new Set(['{"run":2}']));
  });

  it('an unknown outcome is never waited into a replay: waiters get 409 idempotency_outcome_unknown at once', async () => {
    const { idempotency } = engine();
    const key = newKey();
    const held = gate();
    const request = { tenantId: 'tenant', operation: 'pay', key, fingerprint: 'fp', policy: WAIT };
    const first = idempotency.execute(request, async () => {
      held.entered();
      await held.opened;
      throw new AmbiguousOutcomeError();
    });
    await held.entry;
    const started = performance.now();
    const waiters = Array.from({ length: 4 }, () =>
      refusal(
        idempotency.execute(request, () =>
          Promise.resolve({ status: 200, headers: {}, body: 'x' }),
        ),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    held.open();
    expect((await refusal(first)).code).toBe('idempotency_outcome_unknown');
    const refused = await Promise.all(waiters);
    expect(refused.map((e) => e.code)).toEqual(refused.map(() => 'idempotency_outcome_unknown'));
    expect(performance.now() - started).toBeLessThan(2_000); // far from the 10 s bound
  });

  it('a different request under a held key is still 422 at once (waiting never hides a reused key)', async () => {
    const { idempotency } = engine();
    const key = newKey();
    const held = gate();
    const request = { tenantId: 'tenant', operation: 'pay', key, fingerprint: 'fp', policy: WAIT };
    const first = idempotency.execute(request, async () => {
      held.entered();
      await held.opened;
      return { status: 200, headers: {}, body: '"first"' };
    });
    await held.entry;
    const reused = await refusal(
      idempotency.execute({ ...request, fingerprint: 'other' }, () =>
        Promise.resolve({ status: 200, headers: {}, body: 'x' }),
      ),
    );
    expect(reused.code).toBe('idempotency_key_reused');
    held.open();
    await first;
  });

  it('refuses a waitForResult that is not a bound, at construction and per request, writing nothing', async () => {
    expect(() =>
      createIdempotency({
        store: createDrizzleStore(t.db),
        operations: { pay: { waitForResult: { timeoutMs: 0 } } },
      }),
    ).toThrow('waitForResult.timeoutMs of pay must be 1..120000 ms (got 0)');
    const { idempotency } = engine();
    const key = newKey();
    await expect(
      idempotency.execute(
        {
          tenantId: 'tenant',
          operation: 'pay',
          key,
          fingerprint: 'fp',
          policy: { waitForResult: { timeoutMs: Number.POSITIVE_INFINITY } },
        },
        () => Promise.resolve({ status: 200, headers: {}, body: null }),
      ),
    ).rejects.toThrow(RangeError);
    expect(await t.sql`select 1 from idempotency_keys where key = ${key}`).toHaveLength(0);
  });

  it('property: any number of duplicates, any hold time, any first outcome: the invariants of waiting hold', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: 60 }),
        fc.constantFrom('stored' as const, 'released' as const, 'unknown' as const),
        fc.boolean(),
        async (duplicates, holdMs, firstOutcome, sameProcess) => {
          const key = newKey();
          const holder = engine().idempotency;
          const waiter = sameProcess ? holder : engine().idempotency;
          const held = gate();
          let runs = 0;
          const request = { tenantId: 't', operation: 'pay', key, fingerprint: 'fp', policy: WAIT };
          const handler = async (exec: Execution<Tx>): Promise<StoredResponse> => {
            const run = ++runs;
            if (run === 1) {
              held.entered();
              await held.opened;
              await new Promise((resolve) => setTimeout(resolve, holdMs));
              if (firstOutcome === 'released') return { status: 500, headers: {}, body: null };
              if (firstOutcome === 'unknown') throw new AmbiguousOutcomeError();
            }
            return t.db.transaction(async (tx) => {
              await tx.execute(sql`insert into effects values (${key}, ${run})`);
              const response = { status: 201, headers: {}, body: JSON.stringify({ run }) };
              await exec.complete(tx as Tx, response);
              return response;
            });
          };
          const first = holder.execute(request, handler).catch((e: unknown) => e);
          await held.entry;
          const pending = Array.from({ length: duplicates }, () =>
            waiter.execute(request, handler).catch((e: unknown) => e),
          );
          await new Promise((resolve) => setTimeout(resolve, 20)); // they are waiting now
          held.open();
          await first;
          const answers = await Promise.all(pending);
          const codes = answers.map((a) =>
            'kind' in (a as object) ? (a as { kind: string }).kind : (a as { code: string }).code,
          );
          if (firstOutcome === 'unknown') {
            expect(runs).toBe(1);
            expect(codes).toEqual(codes.map(() => 'idempotency_outcome_unknown'));
          } else if (firstOutcome === 'stored') {
            expect(runs).toBe(1);
            expect(codes).toEqual(codes.map(() => 'replayed'));
          } else {
            // One waiter took the released key over and ran; the rest replay its result.
            expect(runs).toBe(2);
            expect(codes.filter((c) => c === 'executed')).toHaveLength(1);
            expect(codes.filter((c) => c === 'replayed')).toHaveLength(duplicates - 1);
          }
          expect(await effects(key)).toBe(firstOutcome === 'unknown' ? 0 : 1);
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe('waitForResult (atomic mode)', () => {
  it('duplicates past the connection lock_timeout wait for the first transaction and replay it; one commit', async () => {
    // lock_timeout 100 ms: without waiting, these duplicates answer 409 after 100 ms.
    const impatient = postgres(t.url, {
      max: DUPLICATES + 2,
      onnotice: () => {},
      connection: { lock_timeout: 100 },
    });
    try {
      const db = drizzle(impatient);
      const { idempotency } = engine({ defaults: { mode: 'atomic' } }, db);
      const key = newKey();
      let inserted!: () => void;
      const insertedKey = new Promise<void>((resolve) => {
        inserted = resolve;
      });
      let runs = 0;
      let lockTimeoutAfterInsert: string | undefined;
      const handler = (exec: Execution<Tx>) =>
        db.transaction(async (tx) => {
          const run = ++runs;
          const response = { status: 201, headers: {}, body: JSON.stringify({ run }) };
          await tx.execute(sql`insert into effects values (${key}, ${run})`);
          await exec.complete(tx as Tx, response);
          // The first to insert holds its uncommitted key for 600 ms (6 x lock_timeout).
          lockTimeoutAfterInsert = String(
            ((await tx.execute(sql`show lock_timeout`)) as unknown as { lock_timeout: string }[])[0]
              ?.lock_timeout,
          );
          inserted();
          await new Promise((resolve) => setTimeout(resolve, 600));
          return response;
        });
      const request = { tenantId: 't', operation: 'pay', key, fingerprint: 'fp', policy: WAIT };
      const first = idempotency.execute(request, handler);
      await insertedKey;
      const duplicates = await Promise.all(
        Array.from({ length: 10 }, () => idempotency.execute(request, handler)),
      );
      const winner = await first;
      expect(winner.kind).toBe('executed');
      expect(duplicates.map((d) => d.kind)).toEqual(duplicates.map(() => 'replayed'));
      expect(new Set(duplicates.map((d) => d.response.body))).toEqual(
        new Set([winner.response.body]),
      );
      expect(await effects(key)).toBe(1);
      // The insert's wider lock wait is put back for the caller's later statements.
      expect(lockTimeoutAfterInsert).toBe('100ms');

      // The bound still holds: a waiter whose bound is shorter than the hold gets 409.
      const key2 = newKey();
      let inserted2!: () => void;
      const insertedKey2 = new Promise<void>((resolve) => {
        inserted2 = resolve;
      });
      const holder = idempotency.execute({ ...request, key: key2 }, (exec) =>
        db.transaction(async (tx) => {
          const response = { status: 201, headers: {}, body: '"held"' };
          await exec.complete(tx as Tx, response);
          inserted2();
          await new Promise((resolve) => setTimeout(resolve, 800));
          return response;
        }),
      );
      await insertedKey2;
      const refused = await refusal(
        idempotency.execute(
          { ...request, key: key2, policy: { waitForResult: { timeoutMs: 300 } } },
          (exec) =>
            db.transaction(async (tx) => {
              const response = { status: 201, headers: {}, body: '"late"' };
              await exec.complete(tx as Tx, response);
              return response;
            }),
        ),
      );
      expect(refused.code).toBe('idempotency_key_in_use');
      expect((await holder).kind).toBe('executed');
    } finally {
      await impatient.end({ timeout: 1 });
    }
  });
});
