import { randomUUID } from 'node:crypto';
import type { AppRouter } from '@once/api';
import type { TestDatabase } from '@once/db/testing';
import { createTRPCClient, httpLink } from '@trpc/client';
import { buildSchema, getIntrospectionQuery, parse, validate } from 'graphql';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createGraphqlHandler } from './graphql-api.ts';
import { GRAPHQL_LIMITS, GraphqlOperationLimits } from './graphql-limits.ts';
import type { WebRuntime } from './runtime.ts';
import { observe, openApiViolations } from './testing/openapi-contract.ts';
import { type ServedHandler, serveFetch } from './testing/serve-fetch.ts';
import { startWebTestServer, type WebTestServer } from './testing/web-test-server.ts';

/**
 * `POST /api/graphql` over real HTTP, dispatched to the same handler `app/api/graphql/route.ts`
 * exports: the GraphQL twin of `checkout.pay`, guarded by `@once/idempotency/graphql`, sharing
 * one payment per (tenant, key) with tRPC and REST.
 */
describe('GraphQL checkout twin over real HTTP', () => {
  let database: TestDatabase;
  let runtime: WebRuntime;
  let server: ServedHandler;
  let web: WebTestServer | undefined;

  beforeAll(async () => {
    web = await startWebTestServer('web_graphql', {
      SESSION_SECRET: 'graphql-test-session-secret-0123',
    });
    ({ database, runtime, server } = web);
  });
  afterAll(async () => {
    await web?.close();
  });

  const auth = { authorization: 'Bearer once_test_tenant_a' };
  const cart = { lines: [{ productId: 'book_sre', quantity: 1 }] };
  const otherCart = { lines: [{ productId: 'book_sre', quantity: 2 }] };
  const PAY = /* GraphQL */ `
    mutation Pay($input: PayInput!) {
      pay(input: $input) { paymentId status amount currency }
    }
  `;

  interface GraphqlAnswer {
    status: number;
    headers: Headers;
    paymentId: string | undefined;
    code: string | undefined;
    replayed: unknown;
    body: {
      data?: { pay?: { paymentId: string; status: string } } | null;
      errors?: { message: string; extensions?: { code?: string } }[];
      extensions?: { idempotency?: { replayed?: boolean } };
    };
  }

  async function graphql(
    key: string | undefined,
    input: unknown,
    headers: Record<string, string> = auth,
  ): Promise<GraphqlAnswer> {
    const response = await fetch(`${server.url}/api/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...headers,
        ...(key ? { 'idempotency-key': key } : {}),
      },
      body: JSON.stringify({ query: PAY, variables: { input } }),
    });
    const body = (await response.json()) as GraphqlAnswer['body'];
    return {
      status: response.status,
      headers: response.headers,
      paymentId: body.data?.pay?.paymentId,
      code: body.errors?.[0]?.extensions?.code,
      replayed: body.extensions?.idempotency?.replayed,
      body,
    };
  }

  const rest = (key: string, body: unknown) =>
    fetch(`${server.url}/api/v1/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth, 'idempotency-key': key },
      body: JSON.stringify(body),
    });

  const trpcPay = (key: string, input: typeof cart) =>
    createTRPCClient<AppRouter>({
      links: [
        httpLink({
          url: `${server.url}/api/trpc`,
          headers: () => ({ ...auth, 'idempotency-key': key }),
        }),
      ],
    }).checkout.pay.mutate(input);

  async function payments(key: string): Promise<number> {
    const [row] = await database.client.sql<{ n: number }[]>`
      select count(*)::int as n from payments where idempotency_key = ${key}`;
    return row!.n;
  }

  it('pays once; the same key again is the stored result with Idempotent-Replayed: true', async () => {
    const key = randomUUID();
    const first = await graphql(key, cart);
    expect(first).toMatchObject({ status: 200, code: undefined, replayed: undefined });
    expect(first.body.data?.pay).toMatchObject({ status: 'processing', currency: 'usd' });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await graphql(key, cart);
    expect(again).toMatchObject({ status: 200, paymentId: first.paymentId, replayed: true });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await payments(key)).toBe(1);
  });

  it('REST first, then GraphQL with the same key: the same payment, answered as a replay', async () => {
    const key = randomUUID();
    const viaRest = await rest(key, cart);
    expect(viaRest.status).toBe(201);
    const created = (await viaRest.json()) as { paymentId: string };
    const viaGraphql = await graphql(key, cart);
    expect(viaGraphql).toMatchObject({
      status: 200,
      paymentId: created.paymentId,
      replayed: true,
    });
    expect(viaGraphql.headers.get('idempotent-replayed')).toBe('true');
    expect(await payments(key)).toBe(1);
  });

  it('GraphQL first, then REST and tRPC with the same key: one payment', async () => {
    const key = randomUUID();
    const viaGraphql = await graphql(key, cart);
    const viaRest = await rest(key, cart);
    expect(viaRest.status).toBe(200);
    expect(((await viaRest.json()) as { paymentId: string }).paymentId).toBe(viaGraphql.paymentId);
    expect((await trpcPay(key, cart)).paymentId).toBe(viaGraphql.paymentId);
    expect(await payments(key)).toBe(1);
  });

  it('tRPC first, then GraphQL with the same key: the same payment', async () => {
    const key = randomUUID();
    const viaTrpc = await trpcPay(key, cart);
    expect(await graphql(key, cart)).toMatchObject({ status: 200, paymentId: viaTrpc.paymentId });
    expect(await payments(key)).toBe(1);
  });

  it('the same key with another cart is 422 idempotency_key_reused, on GraphQL alone and after REST', async () => {
    const key = randomUUID();
    await graphql(key, cart);
    const reused = await graphql(key, otherCart);
    expect(reused).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
    expect(reused.body.data ?? null).toBeNull();

    const restKey = randomUUID();
    expect((await rest(restKey, cart)).status).toBe(201);
    const afterRest = await graphql(restKey, otherCart);
    expect(afterRest).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
    expect(await payments(key)).toBe(1);
    expect(await payments(restKey)).toBe(1);
    // Refused, not stored: the right cart under that key still answers its payment.
    expect(await graphql(restKey, cart)).toMatchObject({ status: 200, replayed: true });
  });

  it('no Idempotency-Key: 400 with extensions.code idempotency_key_missing, nothing written', async () => {
    const before = await database.client.sql<{ n: number }[]>`
      select count(*)::int as n from payments`;
    const missing = await graphql(undefined, cart);
    expect(missing).toMatchObject({ status: 400, code: 'idempotency_key_missing' });
    const malformed = await graphql('', cart, { ...auth, 'idempotency-key': 'x'.repeat(300) });
    expect(malformed).toMatchObject({ status: 400, code: 'idempotency_key_invalid' });
    const after = await database.client.sql<{ n: number }[]>`
      select count(*)::int as n from payments`;
    expect(after[0]!.n).toBe(before[0]!.n);
  });

  it('the tenant comes from the API key only: none is 401, a cookie is ignored, the body cannot name one', async () => {
    const key = randomUUID();
    const anonymous = await graphql(key, cart, {});
    expect(anonymous).toMatchObject({ status: 401, code: 'unauthenticated' });
    const cookieOnly = await graphql(key, cart, { cookie: 'once_session=forged' });
    expect(cookieOnly).toMatchObject({ status: 401, code: 'unauthenticated' });
    const wrong = await graphql(key, cart, { authorization: 'Bearer nope' });
    expect(wrong).toMatchObject({ status: 401, code: 'invalid_credentials' });
    // A tenantId in the input is not part of the schema: GraphQL refuses it before anything runs.
    const smuggled = await graphql(key, { ...cart, tenantId: 'tenant_b' });
    expect(smuggled.status).toBe(400);
    expect(await payments(key)).toBe(0);
    // Tenant B's API key with the same key is B's own payment, not A's.
    const a = await graphql(key, cart);
    const b = await graphql(
      key,
      { lines: [{ productId: 'mug', quantity: 1 }] },
      { authorization: 'Bearer once_test_tenant_b' },
    );
    expect(b.status).toBe(200);
    expect(b.paymentId).not.toBe(a.paymentId);
  });

  it('input over the API bounds is 400 invalid_input and releases the key', async () => {
    const key = randomUUID();
    const bad = await graphql(key, { lines: [{ productId: 'book_sre', quantity: 5000 }] });
    expect(bad).toMatchObject({ status: 400, code: 'invalid_input' });
    const unknown = await graphql(key, { lines: [{ productId: 'ghost', quantity: 1 }] });
    expect(unknown).toMatchObject({ status: 400, code: 'unknown_product' });
    expect(await payments(key)).toBe(0);
    expect(await graphql(key, cart)).toMatchObject({ status: 200, replayed: undefined });
  });

  it('a duplicate while the first is still running is 409 idempotency_key_in_use with Retry-After', async () => {
    const key = randomUUID();
    // Hold the payments table against inserts, so the first request waits inside `pay`.
    const held = await database.client.sql.reserve();
    try {
      await held`begin`;
      await held`lock table payments in share mode`;
      const first = graphql(key, cart);
      // The first request holds the key once its row is in_progress.
      for (let i = 0; i < 100; i++) {
        const [row] = await database.client.sql<{ state: string }[]>`
          select state from idempotency_keys where key = ${key}`;
        if (row?.state === 'in_progress') break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const duplicate = await graphql(key, cart);
      expect(duplicate).toMatchObject({ status: 409, code: 'idempotency_key_in_use' });
      expect(Number(duplicate.headers.get('retry-after'))).toBeGreaterThan(0);
      await held`rollback`;
      expect(await first).toMatchObject({ status: 200 });
    } finally {
      await held`rollback`.catch(() => undefined);
      held.release();
    }
    expect(await payments(key)).toBe(1);
  });

  it('20 concurrent requests with one key, half REST and half GraphQL, make exactly one payment', async () => {
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        if (i % 2 === 0) {
          const response = await rest(key, cart);
          const body = (await response.json()) as { paymentId?: string };
          return { status: response.status, paymentId: body.paymentId };
        }
        const answer = await graphql(key, cart);
        return { status: answer.status, paymentId: answer.paymentId };
      }),
    );
    const ok = answers.filter((a) => a.status === 200 || a.status === 201);
    console.log(
      `REST+GraphQL 20x same key: ${ok.length} answered the payment, ${answers.length - ok.length} refused (409)`,
    );
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((a) => a.paymentId)).size).toBe(1);
    expect(answers.every((a) => [200, 201, 409].includes(a.status))).toBe(true);
    expect(await payments(key)).toBe(1);
  });

  /** One POST of a whole GraphQL request body; the answer's status, code and body. */
  async function post(
    body: { query: string; variables?: unknown; operationName?: string },
    headers: Record<string, string> = auth,
    url = `${server.url}/api/graphql`,
  ) {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const parsed = JSON.parse(text) as GraphqlAnswer['body'] & {
      data?: Record<string, unknown> | null;
      errors?: { message: string; path?: unknown[]; extensions?: { code?: string } }[];
    };
    return {
      status: response.status,
      code: parsed.errors?.[0]?.extensions?.code,
      message: parsed.errors?.[0]?.message,
      body: parsed,
      text,
    };
  }

  async function keyRows(key: string): Promise<number> {
    const [row] = await database.client.sql<{ n: number }[]>`
      select count(*)::int as n from idempotency_keys where key = ${key}`;
    return row!.n;
  }

  it('a second pay hidden in a fragment is refused (400, stable code, why) before anything is written', async () => {
    const key = randomUUID();
    const refused = await post(
      {
        query: /* GraphQL */ `
          mutation Pay($input: PayInput!, $other: PayInput!) {
            pay(input: $input) { paymentId }
            ...Again
          }
          fragment Again on Mutation { again: pay(input: $other) { paymentId } }
        `,
        variables: { input: cart, other: otherCart },
      },
      { ...auth, 'idempotency-key': key },
    );
    expect(refused).toMatchObject({ status: 400, code: 'idempotency_guarded_fields_multiple' });
    expect(refused.message).toMatch(/one guarded field/);
    expect(refused.body.data ?? null).toBeNull();
    expect(await payments(key)).toBe(0);
    expect(await keyRows(key)).toBe(0);
  });

  it('pay inside an inline fragment is guarded like pay at the root: a key row, then replays', async () => {
    const key = randomUUID();
    const query = 'mutation($i: PayInput!) { ... on Mutation { pay(input: $i) { paymentId } } }';
    const answers = [];
    for (let i = 0; i < 3; i++) {
      answers.push(
        await post({ query, variables: { i: cart } }, { ...auth, 'idempotency-key': key }),
      );
    }
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(await keyRows(key)).toBe(1);
    expect(answers[1]!.body.extensions?.idempotency?.replayed).toBe(true);
    expect(await payments(key)).toBe(1);
  });

  it('a retry that only changes the selection set or operation name answers the same payment', async () => {
    const key = randomUUID();
    const first = await graphql(key, cart);
    const retry = await post(
      {
        query: 'mutation Retry($input: PayInput!) { pay(input: $input) { paymentId amount } }',
        variables: { input: cart },
      },
      { ...auth, 'idempotency-key': key },
    );
    expect(retry.status).toBe(200);
    expect(retry.body.data?.pay?.paymentId).toBe(first.paymentId);
    expect(retry.body.extensions?.idempotency?.replayed).toBe(true);
    expect(await payments(key)).toBe(1);
  });

  it('payment_not_found keeps its code and 404; nothing else is masked that the client may see', async () => {
    const missing = await post({
      query: 'query { payment(paymentId: "pay_does_not_exist") { paymentId } }',
    });
    expect(missing).toMatchObject({ status: 404, code: 'payment_not_found' });
  });

  it("a guarded mutation's internal error is masked: no SQL or host reaches the client", async () => {
    const secret = 'relation "payments" at db-primary.internal:5432 (10.0.0.9)';
    const broken = await serveFetch(
      createGraphqlHandler(async () => ({
        ...runtime,
        deps: {
          ...runtime.deps,
          db: new Proxy(runtime.deps.db, {
            get: (target, property, receiver) =>
              property === 'transaction'
                ? () => Promise.reject(new Error(secret))
                : Reflect.get(target, property, receiver),
          }),
        },
      })),
    );
    try {
      const key = randomUUID();
      const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
      const failed = await post(
        { query: PAY, variables: { input: cart } },
        { ...auth, 'idempotency-key': key },
        `${broken.url}/api/graphql`,
      );
      errors.mockRestore();
      expect(failed.text).not.toMatch(/db-primary|5432|10\.0\.0\.9|relation/);
      expect(failed).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', message: 'Unexpected error.' });
      // Failed before it completed: the key is released, the same request may run again.
      expect(await graphql(key, cart)).toMatchObject({ status: 200, replayed: undefined });
    } finally {
      await broken.close();
    }
  });

  it('a 54 KB document of 1,500 lookups is refused before execution with a stable code', async () => {
    const lookups = Array.from(
      { length: 1500 },
      (_, i) => `p${i}:payment(paymentId:"x${i}"){status}`,
    ).join(' ');
    const query = `query Many { ${lookups} }`;
    // Under the 64 KiB body limit, so it is the document's own limit that answers.
    const bytes = JSON.stringify({ query }).length;
    expect(bytes).toBeGreaterThan(54_000);
    expect(bytes).toBeLessThan(64 * 1024);
    const started = performance.now();
    const refused = await post({ query });
    const elapsed = performance.now() - started;
    console.log(
      `GraphQL 1,500 lookups (${(bytes / 1000).toFixed(1)} KB body): ${refused.status} ${refused.code} in ${elapsed.toFixed(1)} ms`,
    );
    expect(refused).toMatchObject({ status: 413, code: 'graphql_document_too_large' });
    // No `data` at all: execution never started (it always answers `data`).
    expect(refused.body).not.toHaveProperty('data');
  });

  it('aliases, field count and depth have limits under the size cap, each with its code', async () => {
    const aliased = Array.from(
      { length: 40 },
      (_, i) => `p${i}: payment(paymentId: "x${i}") { status }`,
    );
    expect(await post({ query: `{ ${aliased.join(' ')} }` })).toMatchObject({
      status: 400,
      code: 'graphql_query_too_complex',
    });
    // Fragments count where they are spread: 9 small fragments, each spreading the next twice.
    const doubling = Array.from(
      { length: 9 },
      (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`,
    );
    const spread = `{ ...F0 } ${doubling.join(' ')} fragment F9 on Query { payment(paymentId: "x") { status } }`;
    const complex = await post({ query: spread });
    expect(complex).toMatchObject({ status: 400, code: 'graphql_query_too_complex' });
    expect(complex.message).toMatch(/1024 fields/);
    // This schema has no type that nests deeper than 3: too deep is also invalid here (see the
    // rule's own test below on a schema that nests), refused before execution all the same.
    const deep = `{ payment(paymentId: "x") { lines { lines { lines { lines { lines { lines { productId } } } } } } } }`;
    const tooDeep = await post({ query: deep });
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.errors?.map((e) => e.extensions?.code)).toContain('graphql_query_too_deep');
    // The standard introspection query stays within every limit outside production.
    expect(await post({ query: getIntrospectionQuery() })).toMatchObject({
      status: 200,
      code: undefined,
    });
  });

  it('introspection answers outside production and is refused (400, stable code) in production', async () => {
    const introspect = { query: '{ __schema { queryType { name } } }' };
    expect(await post(introspect)).toMatchObject({ status: 200, code: undefined });
    vi.stubEnv('NODE_ENV', 'production');
    const production = await serveFetch(createGraphqlHandler(async () => runtime));
    vi.unstubAllEnvs();
    try {
      const refused = await post(introspect, auth, `${production.url}/api/graphql`);
      expect(refused).toMatchObject({ status: 400, code: 'graphql_introspection_disabled' });
      const typename = await post(
        { query: '{ __typename }' },
        auth,
        `${production.url}/api/graphql`,
      );
      expect(typename).toMatchObject({ status: 200, body: { data: { __typename: 'Query' } } });
    } finally {
      await production.close();
    }
  });

  it('the guard and limit refusals and payment_not_found conform to the OpenAPI description', async () => {
    const send = (query: string, headers: Record<string, string> = auth) =>
      fetch(`${server.url}/api/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ query, variables: { input: cart } }),
      }).then(observe);
    const keyed = { ...auth, 'idempotency-key': randomUUID() };
    const answers = [
      await send(
        'mutation($input: PayInput!) { a: pay(input: $input) { paymentId } b: pay(input: $input) { paymentId } }',
        keyed,
      ),
      await send('query { payment(paymentId: "pay_none") { paymentId } }'),
      await send(`query { ${'a: __typename '.repeat(20)} }`),
      await send(`query { ${' '.repeat(GRAPHQL_LIMITS.maxDocumentBytes)}__typename }`),
    ];
    expect(answers.map((a) => a.status)).toEqual([400, 404, 400, 413]);
    for (const answer of answers) {
      expect(openApiViolations('POST', '/api/graphql', answer)).toEqual([]);
    }
  });

  it('every answer here conforms to the OpenAPI description of POST /api/graphql', async () => {
    const key = randomUUID();
    const send = (headers: Record<string, string>, input: unknown) =>
      fetch(`${server.url}/api/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ query: PAY, variables: { input } }),
      }).then(observe);
    const answers = [
      await send({ ...auth, 'idempotency-key': key }, cart),
      await send({ ...auth, 'idempotency-key': key }, cart),
      await send({ ...auth, 'idempotency-key': key }, otherCart),
      await send(auth, cart),
      await send({ 'idempotency-key': key }, cart),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 422, 400, 401]);
    for (const answer of answers) {
      expect(openApiViolations('POST', '/api/graphql', answer)).toEqual([]);
    }
  });
});

describe('GraphQL operation limits (a graphql-js validation rule)', () => {
  const nesting = buildSchema('type Query { node: Node } type Node { child: Node, id: ID }');
  const codes = (query: string) =>
    validate(nesting, parse(query), [GraphqlOperationLimits]).map((e) => e.extensions.code);

  it('depth counts through fragments; the limit itself passes', () => {
    const nested = (levels: number) =>
      `{ node { ${'child { '.repeat(levels - 2)}id${' }'.repeat(levels - 2)} } }`;
    expect(codes(nested(GRAPHQL_LIMITS.maxDepth))).toEqual([]);
    expect(codes(nested(GRAPHQL_LIMITS.maxDepth + 1))).toEqual(['graphql_query_too_deep']);
    const viaFragment = `{ node { ...C } } fragment C on Node { child { child { child { child { child { id } } } } } }`;
    expect(codes(viaFragment)).toEqual(['graphql_query_too_deep']);
  });

  it('aliases and fields count per operation, fragments where they are spread', () => {
    const aliases = (n: number) =>
      `{ ${Array.from({ length: n }, (_, i) => `a${i}: node { id }`).join(' ')} }`;
    expect(codes(aliases(GRAPHQL_LIMITS.maxAliases))).toEqual([]);
    expect(codes(aliases(GRAPHQL_LIMITS.maxAliases + 1))).toEqual(['graphql_query_too_complex']);
    // A fragment cycle is GraphQL's own error (NoFragmentCycles), not a hang here.
    expect(codes('{ node { ...A } } fragment A on Node { child { ...A } }')).toEqual([]);
  });
});

describe('GraphQL capturePayment, cancelPayment and refundPayment over real HTTP', () => {
  let database: TestDatabase;
  let server: ServedHandler;
  let web: WebTestServer | undefined;

  beforeAll(async () => {
    web = await startWebTestServer('web_graphql_money', {
      SESSION_SECRET: 'graphql-money-test-secret-01234',
    });
    ({ database, server } = web);
  });
  afterAll(async () => {
    await web?.close();
  });

  const auth = { authorization: 'Bearer once_test_tenant_a' };
  const PAYMENT_FIELDS = 'paymentId status captureMethod amountCapturable amountReceived';
  const MUTATIONS = {
    capture: `mutation Capture($paymentId: ID!, $amount: Int) {
      capturePayment(paymentId: $paymentId, amount: $amount) { ${PAYMENT_FIELDS} } }`,
    cancel: `mutation Cancel($paymentId: ID!) {
      cancelPayment(paymentId: $paymentId) { ${PAYMENT_FIELDS} } }`,
    refund: `mutation Refund($paymentId: ID!, $amount: Int, $reason: RefundReason) {
      refundPayment(paymentId: $paymentId, amount: $amount, reason: $reason) {
        refundId paymentId amount status reason } }`,
  };

  async function send(
    query: string,
    variables: Record<string, unknown>,
    key?: string,
    headers: Record<string, string> = auth,
  ) {
    const response = await fetch(`${server.url}/api/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...headers,
        ...(key ? { 'idempotency-key': key } : {}),
      },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await response.json()) as {
      data?: Record<string, Record<string, unknown> | null> | null;
      errors?: { extensions?: { code?: string } }[];
    };
    return {
      status: response.status,
      replayed: response.headers.get('idempotent-replayed'),
      data: body.data ? Object.values(body.data)[0] : undefined,
      code: body.errors?.[0]?.extensions?.code,
    };
  }

  /** A GraphQL checkout, moved to `status` as the worker records the processor's answer. */
  async function paymentIn(status: 'authorized' | 'succeeded'): Promise<string> {
    const paid = await send(
      'mutation Pay($input: PayInput!) { pay(input: $input) { paymentId captureMethod } }',
      {
        input: {
          lines: [{ productId: 'book_sre', quantity: 1 }],
          captureMethod: status === 'authorized' ? 'manual' : 'automatic',
        },
      },
      randomUUID(),
    );
    const paymentId = paid.data!.paymentId as string;
    await database.client.sql`update payments set status = ${status} where id = ${paymentId}`;
    return paymentId;
  }
  const written = async (paymentId: string) => ({
    actions: await database.client.sql`
      select kind, amount from payment_actions where payment_id = ${paymentId}`,
    refunds: await database.client.sql`
      select amount from refunds where payment_id = ${paymentId} order by created_at`,
  });

  it('pay takes captureMethod; the payment reads requires_capture once authorised', async () => {
    const paymentId = await paymentIn('authorized');
    const read = await send(`query P($id: ID!) { payment(paymentId: $id) { ${PAYMENT_FIELDS} } }`, {
      id: paymentId,
    });
    expect(read.data).toMatchObject({
      status: 'requires_capture',
      captureMethod: 'manual',
      amountCapturable: 3999,
      amountReceived: 0,
    });
  });

  it('capturePayment: accepted once, replayed with the same key, 422 with another amount', async () => {
    const paymentId = await paymentIn('authorized');
    const key = randomUUID();
    const first = await send(MUTATIONS.capture, { paymentId, amount: 1000 }, key);
    expect(first).toMatchObject({
      status: 200,
      replayed: null,
      data: { paymentId, status: 'processing', amountCapturable: 0 },
    });
    const again = await send(MUTATIONS.capture, { paymentId, amount: 1000 }, key);
    expect(again).toMatchObject({ status: 200, replayed: 'true', data: first.data });
    const reused = await send(MUTATIONS.capture, { paymentId, amount: 999 }, key);
    expect(reused).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
    const concurrent = await Promise.all(
      Array.from({ length: 10 }, () => send(MUTATIONS.capture, { paymentId }, randomUUID())),
    );
    // Other keys: the payment has its capture; each is refused, nothing more is written.
    for (const refused of concurrent) {
      expect(refused).toMatchObject({ status: 409, code: 'payment_not_authorized' });
    }
    expect((await written(paymentId)).actions).toEqual([{ kind: 'capture', amount: 1000 }]);
  });

  it('10 concurrent capturePayment requests with one key capture once', async () => {
    const paymentId = await paymentIn('authorized');
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => send(MUTATIONS.capture, { paymentId }, key)),
    );
    for (const answer of answers) {
      if (answer.status === 200) expect(answer.data).toMatchObject({ status: 'processing' });
      else expect(answer).toMatchObject({ status: 409, code: 'idempotency_key_in_use' });
    }
    expect((await written(paymentId)).actions).toHaveLength(1);
  });

  it('cancelPayment of a succeeded payment and refunds over what was received are refused, nothing written', async () => {
    const succeeded = await paymentIn('succeeded');
    const authorized = await paymentIn('authorized');
    const cases = [
      [MUTATIONS.cancel, { paymentId: succeeded }, 409, 'payment_not_authorized', auth],
      [
        MUTATIONS.refund,
        { paymentId: succeeded, amount: 4000 },
        400,
        'refund_amount_too_large',
        auth,
      ],
      [MUTATIONS.refund, { paymentId: authorized }, 409, 'payment_not_refundable', auth],
      [MUTATIONS.refund, { paymentId: succeeded, amount: 0 }, 400, 'invalid_input', auth],
      [
        MUTATIONS.refund,
        { paymentId: succeeded },
        404,
        'payment_not_found',
        { authorization: 'Bearer once_test_tenant_b' },
      ],
    ] as const;
    for (const [query, variables, status, code, headers] of cases) {
      const answer = await send(query, variables, randomUUID(), headers);
      expect(answer, code).toMatchObject({ status, code });
    }
    expect(await written(succeeded)).toEqual({ actions: [], refunds: [] });
    expect(await written(authorized)).toEqual({ actions: [], refunds: [] });
  });

  it('refundPayment: accepted, replayed, listed; a retry after the request died past its commit refunds nothing more', async () => {
    const paymentId = await paymentIn('succeeded');
    const key = randomUUID();
    const variables = { paymentId, amount: 500, reason: 'duplicate' };
    const first = await send(MUTATIONS.refund, variables, key);
    expect(first).toMatchObject({
      status: 200,
      data: { paymentId, amount: 500, status: 'pending', reason: 'duplicate' },
    });
    expect(await send(MUTATIONS.refund, variables, key)).toMatchObject({
      replayed: 'true',
      data: first.data,
    });
    // The request dies after the refund's transaction committed and before the guard stored
    // the answer: the key is left in progress at the action's recovery point, its lease run out.
    await database.client.sql`
      update idempotency_keys set state = 'in_progress', locked_until = now() - interval '1 second',
        response_status = null, response_headers = null, response_body = null, completed_at = null
      where key = ${key}`;
    expect(await send(MUTATIONS.refund, variables, key)).toMatchObject({
      status: 200,
      data: first.data,
    });
    expect((await written(paymentId)).refunds).toEqual([{ amount: 500 }]);
    const listed = await send(
      'query R($id: ID!) { refunds(paymentId: $id) { refundId amount status } }',
      { id: paymentId },
    );
    expect(listed.data).toEqual([
      { refundId: first.data!.refundId, amount: 500, status: 'pending' },
    ]);
  });
});
