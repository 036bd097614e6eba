import { createSchema, createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { idempotentDirectiveTypeDefs } from './idempotent-fields.ts';
import { useIdempotency } from './plugin.ts';

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
      type Payment { id: Int!, amount: Int! }
      type Query { ok: Boolean }
      type Mutation {
        pay(amount: Int!, hold: Boolean): Payment! @idempotent(operation: "payments.create")
        refund(id: Int!): Boolean
      }
    `,
    resolvers: {
      Mutation: {
        pay: async (_: unknown, args: { amount: number; hold?: boolean }) => {
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
