import { randomUUID } from 'node:crypto';
import { envelop, useEngine, useSchema } from '@envelop/core';
import type { Database } from '@once/db';
import type { Idempotency } from '@once/idempotency';
import { type FetchExecution, storedJson } from '@once/idempotency/fetch';
import { type GraphqlIdempotencyContext, useIdempotency } from '@once/idempotency/graphql';
import { idempotencyMiddleware } from '@once/idempotency/hono';
import {
  type ActionExecution,
  idempotentAction,
  idempotentRouteHandler,
} from '@once/idempotency/next';
import {
  execute,
  GraphQLInt,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  parse,
  specifiedRules,
  validate,
} from 'graphql';
import { Hono } from 'hono';
import type { FetchHandler } from './fetch-routes.ts';
import {
  BENCH_TENANT,
  type BenchPayInput,
  parsePayInput,
  type Transaction,
  writePayment,
} from './payment-write.ts';

const MODES = ['leased', 'atomic'] as const;

/**
 * The payment write under the Next.js, Hono and GraphQL adapters, each as its quickstart uses
 * it and completing in the payment's transaction where the adapter lets it: `/next/route/<mode>`
 * (`idempotentRouteHandler`), `/next/action/<mode>` (`idempotentAction`, called with the key and
 * the input), `/hono/<mode>`, and `/graphql/leased` (the plugin stores the execution result
 * after the resolver's transaction, so atomic mode, which must complete inside it, is not offered).
 */
export function createAdapterRoutes(
  db: Database,
  idempotency: Idempotency<Transaction>,
): [string, FetchHandler][] {
  const hono = new Hono();
  const honoFetch: FetchHandler = async (request) => hono.fetch(request);
  const routes: [string, FetchHandler][] = [
    ['/graphql/leased', createGraphqlHandler(db, idempotency)],
    ['/hono/leased', honoFetch],
    ['/hono/atomic', honoFetch],
  ];
  for (const mode of MODES) {
    const policy = { mode };
    const options = { idempotency, getTenantId: () => BENCH_TENANT, policy };
    const routeHandler = idempotentRouteHandler(
      async (request, exec) => payCompleting(db, parsePayInput(await request.json()), exec),
      { ...options, operation: `bench.pay.next.route.${mode}` },
    );
    // As Next.js calls an app-router handler: the request and the route's (here empty) params.
    routes.push([
      `/next/route/${mode}`,
      (request) => routeHandler(request, { params: Promise.resolve({}) }),
    ]);
    const action = idempotentAction(
      (exec: ActionExecution<Transaction>, _key: string, input: BenchPayInput) =>
        db.transaction((tx) =>
          writePayment(tx, input, exec.key ?? randomUUID(), (result) => exec.complete(tx, result)),
        ),
      {
        ...options,
        operation: `bench.pay.next.action.${mode}`,
        getKey: (key) => key,
        getFingerprintInput: (_key, input) => input,
      },
    );
    routes.push([
      `/next/action/${mode}`,
      async (request) => {
        const input = parsePayInput(await request.json());
        const result = await action(request.headers.get('idempotency-key') ?? '', input);
        return Response.json(result, { status: result.ok ? 201 : result.status });
      },
    ]);
    hono.post(
      `/hono/${mode}`,
      idempotencyMiddleware({
        ...options,
        operation: `bench.pay.hono.${mode}`,
        getFingerprintInput: (c) => c.req.json(),
      }),
      async (c) => payCompleting(db, parsePayInput(await c.req.json()), c.get('idempotency')),
    );
  }
  return routes;
}

/** The payment in one transaction, its response stored by `exec` inside it. */
function payCompleting(
  db: Database,
  input: BenchPayInput,
  exec: FetchExecution<Transaction>,
): Promise<Response> {
  return db.transaction(async (tx) => {
    let response: Response | undefined;
    await writePayment(tx, input, exec.key ?? randomUUID(), (result) => {
      const stored = storedJson(result, { status: 201 });
      response = new Response(stored.body, { status: stored.status, headers: stored.headers });
      return exec.complete(tx, stored);
    });
    return response!;
  });
}

/** `POST /graphql/leased`: `mutation { pay(productId, quantity) { paymentId } }` on Envelop with the plugin. */
function createGraphqlHandler(db: Database, idempotency: Idempotency<Transaction>): FetchHandler {
  const payment = new GraphQLObjectType({
    name: 'Payment',
    fields: {
      paymentId: { type: new GraphQLNonNull(GraphQLString) },
      amount: { type: new GraphQLNonNull(GraphQLInt) },
    },
  });
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLInt } } }),
    mutation: new GraphQLObjectType({
      name: 'Mutation',
      fields: {
        pay: {
          type: new GraphQLNonNull(payment),
          args: {
            productId: { type: new GraphQLNonNull(GraphQLString) },
            quantity: { type: new GraphQLNonNull(GraphQLInt) },
          },
          extensions: { idempotency: { operation: 'bench.pay.graphql.leased' } },
          resolve: (_: unknown, args: BenchPayInput, ctx: GraphqlIdempotencyContext<Transaction>) =>
            db.transaction((tx) => writePayment(tx, args, ctx.idempotency.key ?? randomUUID())),
        },
      },
    }),
  });
  const getEnveloped = envelop({
    plugins: [
      useEngine({ parse, validate, specifiedRules, execute }),
      useSchema(schema),
      useIdempotency({ idempotency, getTenantId: () => BENCH_TENANT }),
    ],
  });
  return async (request) => {
    const input = parsePayInput(await request.json());
    const run = getEnveloped({ request });
    const result = await run.execute({
      schema: run.schema,
      document: run.parse(PAY_MUTATION),
      variableValues: { ...input },
      contextValue: await run.contextFactory(),
    });
    return Response.json(result, { status: 'errors' in result && result.errors ? 500 : 200 });
  };
}

const PAY_MUTATION =
  'mutation Pay($productId: String!, $quantity: Int!) { pay(productId: $productId, quantity: $quantity) { paymentId amount } }';
