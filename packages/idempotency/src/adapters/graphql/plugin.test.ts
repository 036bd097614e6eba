import fc from 'fast-check';
import { GraphQLError } from 'graphql';
import { createSchema, createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { IdempotencyError } from '../../core/errors.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { idempotentDirectiveTypeDefs } from './idempotent-fields.ts';
import { type GraphqlIdempotencyContext, useIdempotency } from './plugin.ts';

let t: IdempotencyTestDatabase;
let yoga: ReturnType<typeof createYoga>;
let runs = 0;
let release: (() => void) | undefined;
let entered: (() => void) | undefined;

beforeAll(async () => {
  t = await createIdempotencyTestDatabase('graphql');
  const schema = createSchema({
    typeDefs: /* GraphQL */ `
      ${idempotentDirectiveTypeDefs}
      type Payment { id: Int!, amount: Int!, receipt: String }
      type Query { ok: Boolean }
      type Mutation {
        pay(amount: Int!, hold: Boolean): Payment! @idempotent(operation: "payments.create")
        refund(id: Int!): Boolean
        cut(afterPhase: Boolean!): Int! @idempotent(operation: "payments.cut")
      }
    `,
    resolvers: {
      Mutation: {
        pay: async (_: unknown, args: { amount: number; hold?: boolean }) => {
          if (args.amount < 0) {
            // An internal failure before anything was written; its text must not reach clients.
            throw new Error('insert into payments failed: connection to db.internal:5432 refused');
          }
          runs++;
          if (args.hold) {
            entered?.();
            await new Promise<void>((resolve) => {
              release = resolve;
            });
          }
          return { id: runs, amount: args.amount };
        },
        refund: () => true,
        // Its connection lost as the COMMIT went out (after a phase, or before anything was
        // written), turned into a refusal as an app's error mapping does.
        cut: async (
          _: unknown,
          args: { afterPhase: boolean },
          ctx: GraphqlIdempotencyContext<unknown>,
        ) => {
          if (ctx.idempotency.recoveryPoint === 'paid') return ctx.idempotency.recoveryData;
          if (args.afterPhase)
            await t.db.transaction((tx) => ctx.idempotency.advance(tx, 'paid', 7));
          const lost = Object.assign(new Error('write CONNECTION_CLOSED'), {
            code: 'CONNECTION_CLOSED',
          });
          throw new GraphQLError('database unavailable', {
            originalError: new IdempotencyError('idempotency_store_unavailable', { cause: lost }),
          });
        },
      },
      Payment: {
        // Fails after the payment was made: a nullable sub-field, the mutation itself committed.
        receipt: () => {
          throw new Error('receipt printer 10.0.0.7:9100 ECONNREFUSED');
        },
      },
    },
  });
  yoga = createYoga({
    schema,
    plugins: [
      useIdempotency({
        idempotency: createIdempotency({ store: createDrizzleStore(t.db) }),
        getTenantId: (ctx) => (ctx as { request: Request }).request.headers.get('x-tenant') ?? 'a',
      }),
    ],
  });
});
afterAll(async () => {
  await t?.drop();
});

async function pay(key: string | undefined, amount: number, hold = false) {
  const response = await yoga.fetch('http://yoga/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify({
      query: 'mutation Pay($a: Int!, $h: Boolean) { pay(amount: $a, hold: $h) { id amount } }',
      variables: { a: amount, h: hold },
    }),
  });
  const body = (await response.json()) as {
    data?: { pay: { id: number; amount: number } } | null;
    errors?: { extensions?: { code?: string } }[];
  };
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed'),
    retryAfter: response.headers.get('retry-after'),
    code: body.errors?.[0]?.extensions?.code,
    data: body.data,
  };
}

interface Sent {
  status: number;
  replayed: string | null;
  code: string | undefined;
  data: Record<string, unknown> | null | undefined;
  errors: { message: string; path?: (string | number)[]; extensions?: { code?: string } }[];
  text: string;
}

async function send(
  key: string | undefined,
  query: string,
  variables: object = {},
  operationName?: string,
): Promise<Sent> {
  const response = await yoga.fetch('http://yoga/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify({ query, variables, operationName }),
  });
  const text = await response.text();
  const body = JSON.parse(text) as Pick<Sent, 'data' | 'errors'>;
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed'),
    code: body.errors?.[0]?.extensions?.code,
    data: body.data,
    errors: body.errors ?? [],
    text,
  };
}

async function keyRows(key: string): Promise<number> {
  const [row] = await t.sql<{ n: number }[]>`
    select count(*)::int as n from idempotency_keys where key = ${key}`;
  return row!.n;
}

let keys = 0;
const freshKey = () => `gql-${Date.now()}-${keys++}`;

describe('useIdempotency (Envelop / GraphQL Yoga)', () => {
  it('executes once, replays the stored result with Idempotent-Replayed, 422 on another input', async () => {
    const first = await pay('g1', 100);
    expect(first).toMatchObject({ status: 200, replayed: null, data: { pay: { amount: 100 } } });
    const replay = await pay('g1', 100);
    expect(replay).toMatchObject({ status: 200, replayed: 'true', data: first.data });
    const reused = await pay('g1', 999);
    expect(reused).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
    expect(runs).toBe(1);
  });

  it('refuses a duplicate in flight with 409, Retry-After and a stable code', async () => {
    const running = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const held = pay('g2', 5, true);
    await running;
    const duplicate = await pay('g2', 5, true);
    expect(duplicate).toMatchObject({ status: 409, code: 'idempotency_key_in_use' });
    expect(Number(duplicate.retryAfter)).toBeGreaterThan(0);
    release?.();
    expect(await held).toMatchObject({ status: 200, data: { pay: { amount: 5 } } });
  });

  it('refuses a guarded mutation without a key (400) and leaves unmarked mutations alone', async () => {
    expect(await pay(undefined, 1)).toMatchObject({ status: 400, code: 'idempotency_key_missing' });
    const response = await yoga.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'mutation { refund(id: 1) }' }),
    });
    expect(await response.json()).toEqual({ data: { refund: true } });
  });
});

describe('useIdempotency: guarded fields behind fragments', () => {
  const hidden = {
    'an inline fragment': 'mutation { ... on Mutation { pay(amount: 3) { id } } }',
    'a fragment without type condition': 'mutation { ... { pay(amount: 3) { id } } }',
    'a named fragment': 'mutation { ...P } fragment P on Mutation { pay(amount: 3) { id } }',
    'nested fragments with @include': `mutation($yes: Boolean!) { ... on Mutation { ...P @include(if: $yes) } }
      fragment P on Mutation { ... on Mutation { charged: pay(amount: 3) { id } } }`,
  };
  for (const [where, query] of Object.entries(hidden)) {
    it(`${where}: three sends with one key run the mutation once and store the key`, async () => {
      const key = freshKey();
      const before = runs;
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await send(key, query, { yes: true }));
      expect(answers.map((a) => [a.status, a.replayed])).toEqual([
        [200, null],
        [200, 'true'],
        [200, 'true'],
      ]);
      expect(runs - before).toBe(1);
      expect(await keyRows(key)).toBe(1);
    });
  }

  it('property: however the guarded field is nested in fragments, a second send is a replay', async () => {
    const wrap = fc.constantFrom(
      (inner: string) => `... on Mutation { ${inner} }`,
      (inner: string) => `... { ${inner} }`,
      (inner: string) => `... @include(if: true) { ${inner} }`,
      (inner: string) => `... @skip(if: $no) { ${inner} }`,
      'named' as const,
    );
    await fc.assert(
      fc.asyncProperty(fc.array(wrap, { maxLength: 5 }), fc.boolean(), async (wrappers, alias) => {
        let selection = `${alias ? 'p: ' : ''}pay(amount: 4) { id }`;
        const fragments: string[] = [];
        for (const w of wrappers) {
          if (w === 'named') {
            const name = `F${fragments.length}`;
            fragments.push(`fragment ${name} on Mutation { ${selection} }`);
            selection = `...${name}`;
          } else selection = w(selection);
        }
        const query = `mutation($no: Boolean!) { __typename @skip(if: $no) ${selection} } ${fragments.join(' ')}`;
        const key = freshKey();
        const before = runs;
        const first = await send(key, query, { no: false });
        const second = await send(key, query, { no: false });
        expect([first.status, second.status, second.replayed]).toEqual([200, 200, 'true']);
        expect(runs - before).toBe(1);
      }),
      { numRuns: 12 },
    );
  });

  it('two guarded fields, one behind a fragment or an alias, are refused before anything runs', async () => {
    const twice = [
      'mutation { pay(amount: 1) { id } ... on Mutation { again: pay(amount: 1) { id } } }',
      'mutation { a: pay(amount: 1) { id } b: pay(amount: 1) { id } }',
      'mutation { pay(amount: 1) { id } ...P } fragment P on Mutation { other: pay(amount: 2) { id } }',
    ];
    for (const query of twice) {
      const key = freshKey();
      const before = runs;
      const refused = await send(key, query);
      expect(refused).toMatchObject({ status: 400, code: 'idempotency_guarded_fields_multiple' });
      expect(refused.data ?? null).toBeNull();
      expect(refused.errors[0]?.message).toMatch(/one guarded field/i);
      expect(runs).toBe(before);
      expect(await keyRows(key)).toBe(0);
    }
  });

  it('the same field merged from a fragment (same response key) is one execution, not two', async () => {
    const key = freshKey();
    const before = runs;
    const merged = await send(
      key,
      'mutation { pay(amount: 5) { id } ... on Mutation { pay(amount: 5) { amount } } }',
    );
    expect(merged).toMatchObject({ status: 200, data: { pay: { amount: 5 } } });
    expect(runs - before).toBe(1);
  });
});

describe('useIdempotency: results with errors', () => {
  it('a sub-field failing after the mutation ran stores the result: the retry replays it, no second run', async () => {
    const key = freshKey();
    const before = runs;
    const query = 'mutation { pay(amount: 6) { id amount receipt } }';
    const first = await send(key, query);
    expect(first).toMatchObject({
      status: 200,
      replayed: null,
      data: { pay: { amount: 6, receipt: null } },
    });
    expect(first.errors.map((e) => e.path)).toEqual([['pay', 'receipt']]);
    const retry = await send(key, query);
    expect(retry).toMatchObject({ status: 200, replayed: 'true', data: first.data });
    expect(retry.errors).toEqual(first.errors);
    expect(runs - before).toBe(1);
  });

  it('the guarded field failing before it completed releases the key: the retry runs again', async () => {
    const key = freshKey();
    const failed = await send(key, 'mutation { pay(amount: -1) { id } }');
    expect(failed.errors.map((e) => e.path)).toEqual([['pay']]);
    const before = runs;
    const retry = await send(key, 'mutation { pay(amount: 9) { id } }');
    // Released, not stored: the same key now takes another request (no 422).
    expect(retry).toMatchObject({ status: 200, replayed: null, data: { pay: { id: before + 1 } } });
  });

  it("masks a guarded mutation's internal error text; idempotency refusals keep their code", async () => {
    const failed = await send(freshKey(), 'mutation { pay(amount: -1) { id } }');
    expect(failed.text).not.toMatch(/db\.internal|5432|insert into/);
    expect(failed.errors[0]).toMatchObject({ message: 'Unexpected error.', path: ['pay'] });
    expect(failed.errors[0]?.extensions?.code).toBe('INTERNAL_SERVER_ERROR');
    const sub = await send(freshKey(), 'mutation { pay(amount: 2) { receipt } }');
    expect(sub.text).not.toMatch(/10\.0\.0\.7|ECONNREFUSED/);
    expect(sub.errors[0]).toMatchObject({ message: 'Unexpected error.', path: ['pay', 'receipt'] });
  });
});

describe('useIdempotency: a connection lost under the guarded field', () => {
  const cut = (key: string, afterPhase: boolean) =>
    send(key, 'mutation ($p: Boolean!) { cut(afterPhase: $p) }', { p: afterPhase });
  const state = async (key: string) =>
    (await t.sql`select state, recovery_point from idempotency_keys where key = ${key}`)[0];

  it('after a phase was written: 409 outcome unknown, the key kept; the retry answers the phase', async () => {
    const key = freshKey();
    expect(await cut(key, true)).toMatchObject({
      status: 409,
      code: 'idempotency_outcome_unknown',
    });
    expect(await state(key)).toEqual({ state: 'in_progress', recovery_point: 'paid' });
    expect(await cut(key, true)).toMatchObject({ status: 200, data: { cut: 7 } });
  });

  it("before anything was written: the resolver's own answer, the key released", async () => {
    const key = freshKey();
    expect(await cut(key, false)).toMatchObject({
      status: 503,
      code: 'idempotency_store_unavailable',
    });
    // Released: the same key runs again at once (no 409 in use).
    expect(await cut(key, true)).toMatchObject({
      status: 409,
      code: 'idempotency_outcome_unknown',
    });
  });
});

describe('useIdempotency: what the fingerprint covers', () => {
  it('another selection set, operation name or spelling of the same arguments is a replay; other arguments are 422', async () => {
    const key = freshKey();
    const before = runs;
    const first = await send(key, 'mutation A { pay(amount: 7) { id } }');
    expect(first).toMatchObject({ status: 200, replayed: null });
    const id = (first.data as { pay: { id: number } }).pay.id;
    const asked = [
      await send(key, 'mutation B { pay(amount: 7) { id amount } }'),
      await send(key, 'mutation C($a: Int!) { pay(amount: $a) { id } }', { a: 7 }),
      await send(
        key,
        'query Q { __typename } mutation M { ... on Mutation { pay(amount: 7) { id } } }',
        {},
        'M',
      ),
    ];
    for (const answer of asked) {
      expect(answer).toMatchObject({ status: 200, replayed: 'true', data: { pay: { id } } });
    }
    const aliased = await send(key, 'mutation { charged: pay(amount: 7) { id } }');
    expect(aliased).toMatchObject({ status: 200, replayed: 'true', data: { charged: { id } } });
    const other = await send(key, 'mutation { pay(amount: 8) { id } }');
    expect(other).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
    expect(runs - before).toBe(1);
  });
});
