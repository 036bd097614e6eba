import { randomUUID } from 'node:crypto';
import type { AppRouter } from '@once/api';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebRuntime, type WebRuntime } from './runtime.ts';
import { observe, openApiViolations } from './testing/openapi-contract.ts';
import { type ServedHandler, serveFetch } from './testing/serve-fetch.ts';
import { webApiRoutes } from './testing/web-routes.ts';

/**
 * `POST /api/graphql` over real HTTP, dispatched to the same handler `app/api/graphql/route.ts`
 * exports: the GraphQL twin of `checkout.pay`, guarded by `@once/idempotency/graphql`, sharing
 * one payment per (tenant, key) with tRPC and REST.
 */
describe('GraphQL checkout twin over real HTTP', () => {
  let database: TestDatabase;
  let runtime: WebRuntime;
  let server: ServedHandler;

  beforeAll(async () => {
    database = await createTestDatabase('web_graphql');
    runtime = await startWebRuntime({
      DATABASE_URL: database.url,
      SESSION_SECRET: 'graphql-test-session-secret-0123',
    });
    server = await serveFetch(webApiRoutes(async () => runtime));
  });
  afterAll(async () => {
    await server?.close();
    await runtime?.client.close();
    await database?.drop();
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
