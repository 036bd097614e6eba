import { initTRPC } from '@trpc/server';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchIdempotency } from '../adapters/fetch/fetch-idempotency.ts';
import { defaultFingerprintInput } from '../adapters/fetch/fingerprint-input.ts';
import { IDEMPOTENCY_KEY_FIELD, idempotentAction } from '../adapters/next/server-action.ts';
import { createIdempotencyPlugin, type IdempotencyMeta } from '../adapters/trpc/plugin.ts';
import { createIdempotency, type Idempotency } from '../core/engine.ts';
import { computeFingerprint } from '../core/fingerprint.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

/**
 * A different request must never get another's stored response: two inputs that differ in
 * anything the request means (order of repeated values, media type, bytes, file contents,
 * Set/Map contents) never share a fingerprint. Equal-meaning inputs (JSON re-serialised, pairs
 * of different names in another order) still do.
 */
const fingerprintOf = async (request: Request) =>
  computeFingerprint('op', await defaultFingerprintInput(request));

const pairs = fc.array(
  fc.tuple(fc.constantFrom('a', 'b', 'amount'), fc.constantFrom('', '1', '5', '100', 'x y')),
  { maxLength: 5 },
);
/** Two lists of pairs: unrelated, or the same pairs in another order (where collisions hid). */
const pairsAndAnother = fc.oneof(
  fc.tuple(pairs, pairs),
  pairs.chain((a) => fc.tuple(fc.constant(a), fc.shuffledSubarray(a, { minLength: a.length }))),
);
/** What a list of pairs means: per name, its values in the order sent. */
const meaning = (list: [string, string][]) =>
  JSON.stringify([...list].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0)));

describe('fetch: default fingerprint', () => {
  it('repeated query parameters keep their order: amount=100&amount=5 is not amount=5&amount=100', async () => {
    const url = (query: string) => new Request(`http://x/pay?${query}`, { method: 'POST' });
    expect(await fingerprintOf(url('amount=100&amount=5'))).not.toBe(
      await fingerprintOf(url('amount=5&amount=100')),
    );
    // Different names in another order are still the same request.
    expect(await fingerprintOf(url('a=1&b=2'))).toBe(await fingerprintOf(url('b=2&a=1')));
  });

  it('property: query strings and form bodies share a fingerprint exactly when they mean the same', async () => {
    await fc.assert(
      fc.asyncProperty(pairsAndAnother, fc.boolean(), async ([a, b], asForm) => {
        const build = (list: [string, string][]) => {
          const text = new URLSearchParams(list).toString();
          return asForm
            ? new Request('http://x/pay', {
                method: 'POST',
                headers: { 'content-type': 'application/x-www-form-urlencoded' },
                body: text,
              })
            : new Request(`http://x/pay?${text}`, { method: 'POST' });
        };
        const same = (await fingerprintOf(build(a))) === (await fingerprintOf(build(b)));
        expect(same).toBe(meaning(a) === meaning(b));
      }),
      { numRuns: 300 },
    );
  });

  it('the media type is part of the request: a JSON string and the same text as text/plain differ', async () => {
    const body = (type: string, text = '"hi"') =>
      new Request('http://x/pay', {
        method: 'POST',
        headers: { 'content-type': type },
        body: text,
      });
    expect(await fingerprintOf(body('application/json'))).not.toBe(
      await fingerprintOf(body('text/plain', 'hi')),
    );
    expect(await fingerprintOf(body('application/json'))).not.toBe(
      await fingerprintOf(body('text/plain')),
    );
    // Parameters are not: a retry adding `; charset=utf-8` is the same request.
    expect(await fingerprintOf(body('application/json'))).toBe(
      await fingerprintOf(body('application/json; charset=utf-8')),
    );
  });

  it('property: bodies of other types differ by media type or by any byte (invalid UTF-8 included)', async () => {
    const type = fc.constantFrom('text/plain', 'application/octet-stream', 'application/json', '');
    const bytes = fc.uint8Array({ minLength: 1, maxLength: 8 });
    await fc.assert(
      fc.asyncProperty(type, bytes, type, bytes, async (typeA, a, typeB, b) => {
        const build = (contentType: string, body: Uint8Array) =>
          new Request('http://x/pay', {
            method: 'POST',
            headers: contentType ? { 'content-type': contentType } : {},
            body: body as BodyInit,
          });
        const sameMeaning = (() => {
          if (typeA !== typeB) return false;
          if (Buffer.from(a).equals(Buffer.from(b))) return true;
          // JSON is compared by value: only two parseable JSON texts of one value are equal.
          if (typeA !== 'application/json') return false;
          const value = (x: Uint8Array) => {
            try {
              return canonicalize(JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(x)));
            } catch {
              return undefined;
            }
          };
          return value(a) !== undefined && value(a) === value(b);
        })();
        const same =
          (await fingerprintOf(build(typeA, a))) === (await fingerprintOf(build(typeB, b)));
        expect(same).toBe(sameMeaning);
      }),
      { numRuns: 500 },
    );
  });

  it('two distinct invalid UTF-8 bodies differ', async () => {
    const bytes = (value: number) =>
      new Request('http://x/pay', { method: 'POST', body: new Uint8Array([0x61, value]) });
    expect(await fingerprintOf(bytes(0xff))).not.toBe(await fingerprintOf(bytes(0xfe)));
  });
});

describe('computeFingerprint: distinct plain data never collides; other data is refused', () => {
  it('property: two JSON values share a fingerprint exactly when their canonical forms are equal', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 4 }), (a, b) => {
        const same = computeFingerprint('op', a) === computeFingerprint('op', b);
        expect(same).toBe(canonicalize(a) === canonicalize(b));
      }),
      { numRuns: 500 },
    );
  });

  it('refuses with idempotency_input_invalid: Map, Set, BigInt, cycles, typed arrays, NaN, nesting past the cap', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    let deep: unknown = [];
    for (let i = 0; i < 3000; i++) deep = [deep];
    for (const input of [
      new Map([['a', 1]]),
      { items: new Set([1, 2]) },
      { amount: 10n },
      cyclic,
      new Uint8Array([1]),
      Number.NaN,
      deep,
    ]) {
      expect(() => computeFingerprint('op', input)).toThrow(
        expect.objectContaining({ code: 'idempotency_input_invalid', status: 400 }),
      );
    }
    // A Date is its ISO string (its toJSON), as JSON has it.
    expect(computeFingerprint('op', { at: new Date(0) })).toBe(
      computeFingerprint('op', { at: '1970-01-01T00:00:00.000Z' }),
    );
  });
});

describe('guards answer bad input, never throw', () => {
  let t: IdempotencyTestDatabase;
  let idempotency: Idempotency<unknown>;
  beforeAll(async () => {
    t = await createIdempotencyTestDatabase('fingerprints');
    idempotency = createIdempotency({ store: createDrizzleStore(t.db) }) as Idempotency<unknown>;
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('fetch: a 6 KB body of nested arrays is a 400 problem, nothing runs', async () => {
    const body = `${'['.repeat(3000)}${']'.repeat(3000)}`;
    let ran = false;
    const response = await fetchIdempotency(idempotency).handle(
      new Request('http://x/pay', {
        method: 'POST',
        headers: { 'idempotency-key': 'deep-1', 'content-type': 'application/json' },
        body,
      }),
      { tenantId: 't', operation: 'pay' },
      async () => {
        ran = true;
        return new Response('ok');
      },
    );
    expect([response.status, (await response.json()).code, ran]).toEqual([
      400,
      'idempotency_input_invalid',
      false,
    ]);
  });

  it('tRPC: input nested past the cap is BAD_REQUEST with the stable code, nothing runs', async () => {
    type Context = { headers: Headers };
    const trpc = initTRPC.context<Context>().meta<IdempotencyMeta>().create();
    const idempotent = createIdempotencyPlugin({
      idempotency,
      getTenantId: (_ctx: Context) => 't',
      getRequestHeaders: (ctx) => ctx.headers,
    });
    let ran = false;
    const router = trpc.router({
      pay: trpc.procedure
        .meta({ idempotency: { operation: 'pay' } })
        .concat(idempotent)
        .input((value: unknown) => value)
        .mutation(() => {
          ran = true;
          return 'paid';
        }),
    });
    let deep: unknown = [];
    for (let i = 0; i < 3000; i++) deep = [deep];
    const error = await router
      .createCaller({ headers: new Headers({ 'idempotency-key': 'deep-trpc' }) })
      .pay(deep)
      .then(
        () => undefined,
        (e: { code?: string; cause?: { code?: string } }) => e,
      );
    expect([error?.code, error?.cause?.code, ran]).toEqual([
      'BAD_REQUEST',
      'idempotency_input_invalid',
      false,
    ]);
  });

  const action = () => {
    const runs: unknown[][] = [];
    const buy = idempotentAction(
      async (_exec, ...args: unknown[]) => {
        runs.push(args);
        return { ok: runs.length };
      },
      {
        idempotency,
        operation: 'buy',
        getTenantId: () => 't',
        getKey: (first) =>
          first instanceof FormData ? String(first.get(IDEMPOTENCY_KEY_FIELD)) : 'k',
      },
    );
    return { buy, runs };
  };

  it('Server Action: BigInt, cyclic, Set and Map arguments answer { ok: false } 400, nothing runs', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const { buy, runs } = action();
    for (const argument of [10n, cyclic, new Set(['book']), new Map([['book', 1]])]) {
      expect(await buy(argument)).toMatchObject({
        ok: false,
        code: 'idempotency_input_invalid',
        status: 400,
      });
    }
    expect(runs).toHaveLength(0);
  });

  it('Server Action: property: two files of one name, type and size but other contents are two requests', async () => {
    const { buy } = action();
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 4, maxLength: 4 }),
        fc.uint8Array({ minLength: 4, maxLength: 4 }),
        async (a, b) => {
          fc.pre(!Buffer.from(a).equals(Buffer.from(b)));
          const key = `file-${++round}`;
          const form = (bytes: Uint8Array) => {
            const data = new FormData();
            data.set(IDEMPOTENCY_KEY_FIELD, key);
            data.set('doc', new File([bytes as BlobPart], 'doc.bin', { type: 'application/pdf' }));
            return data;
          };
          expect(await buy(form(a))).toMatchObject({ ok: true, replayed: false });
          expect(await buy(form(b))).toMatchObject({ ok: false, code: 'idempotency_key_reused' });
          expect(await buy(form(a))).toMatchObject({ ok: true, replayed: true });
        },
      ),
      { numRuns: 30 },
    );
  });
});
