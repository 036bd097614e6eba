import { createSchema, createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { idempotentDirectiveTypeDefs } from './idempotent-fields.ts';
import { type GraphqlAnswer, useIdempotency } from './plugin.ts';

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('graphql_on_answered');
});
afterAll(async () => {
  await t?.drop();
});

function serverWith(onAnswered: (answer: GraphqlAnswer) => unknown) {
  let runs = 0;
  const yoga = createYoga({
    schema: createSchema({
      typeDefs: /* GraphQL */ `
        ${idempotentDirectiveTypeDefs}
        type Payment { id: Int!, amount: Int! }
        type Query { ok: Boolean }
        type Mutation { pay(amount: Int!): Payment! @idempotent(operation: "payments.create") }
      `,
      resolvers: {
        Mutation: {
          pay: (_: unknown, args: { amount: number }) => ({ id: ++runs, amount: args.amount }),
        },
      },
    }),
    plugins: [
      // biome-ignore lint/correctness/useHookAtTopLevel: an Envelop plugin factory (Envelop names them use*), not a React hook
      useIdempotency({
        idempotency: createIdempotency({ store: createDrizzleStore(t.db) }),
        getTenantId: () => 'acct_a',
        onAnswered,
      }),
    ],
  });
  return async (key: string, amount: number, field = 'pay') => {
    const response = await yoga.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ query: `mutation { ${field}: pay(amount: ${amount}) { id } }` }),
    });
    const body = (await response.json()) as { data?: unknown; extensions?: unknown };
    return { status: response.status, body };
  };
}

describe('useIdempotency onAnswered', () => {
  it('tells an executed and a replayed mutation, with the key, the result sent and where the guarded field sits', async () => {
    const heard: GraphqlAnswer[] = [];
    const pay = serverWith((answer) => {
      heard.push(answer);
    });
    expect((await pay('goa-1', 100)).body.data).toEqual({ pay: { id: 1 } });
    expect((await pay('goa-1', 100, 'again')).body.data).toEqual({ again: { id: 1 } });
    expect(heard.map((a) => [a.outcome, a.tenantId, a.operation, a.key, a.responseKey])).toEqual([
      ['executed', 'acct_a', 'payments.create', 'goa-1', 'pay'],
      ['replayed', 'acct_a', 'payments.create', 'goa-1', 'again'],
    ]);
    expect(heard.map((a) => a.result.data?.[a.responseKey])).toEqual([{ id: 1 }, { id: 1 }]);
  });

  it("is told of the key's refusal: a reused key's 422, with its code, the answer unchanged", async () => {
    const heard: GraphqlAnswer[] = [];
    const pay = serverWith((answer) => heard.push(answer));
    await pay('goa-2', 100);
    expect((await pay('goa-2', 999)).status).toBe(422);
    expect(heard.map((a) => [a.outcome, a.key, a.refusal])).toEqual([
      ['executed', 'goa-2', undefined],
      ['refused', 'goa-2', 'idempotency_key_reused'],
    ]);
  });

  it('cannot break the answer: what it throws is logged, and the mutation is answered and replayed as ever', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const pay = serverWith(() => {
      throw new Error('timeline down');
    });
    expect((await pay('goa-3', 100)).body.data).toEqual({ pay: { id: 1 } });
    const replay = await pay('goa-3', 100);
    expect([replay.status, replay.body.data]).toEqual([200, { pay: { id: 1 } }]);
    expect(logged).toHaveBeenCalledTimes(2);
    logged.mockRestore();
  });

  it('may add to the extensions of the result it hears: they are sent, the stored copy stays plain', async () => {
    const pay = serverWith((answer) => {
      if (answer.outcome === 'executed')
        answer.result.extensions = { ...answer.result.extensions, marked: true };
    });
    expect((await pay('goa-4', 100)).body.extensions).toEqual({ marked: true });
    expect((await pay('goa-4', 100)).body.extensions).toEqual({ idempotency: { replayed: true } });
  });
});
