import { createDatabaseClient } from '@once/db';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { IdempotencyError, isIdempotencyError } from '@once/idempotency';
import { findFreePort } from '@once/postgres';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContext } from '../context.ts';
import { createApiDependencies } from '../dependencies.ts';
import { appRouter } from '../root.ts';
import { TEST_SESSION_SECRET } from '../testing/api-test-harness.ts';
import { ApiError } from './api-error.ts';
import { refusalOf, toProblemResponse } from './to-transport-error.ts';

// A database that is away (stopped, restarting, our connection terminated) anywhere in a
// request used to reach the client as a 500 whose message was the driver's: "Failed query:
// select "id", "name" from "tenants" ...", printed verbatim by the checkout. It must be the key
// store's fail-closed 503 `idempotency_store_unavailable` with Retry-After, on every transport.

let shared: TestDatabase;
/** A real `pg_terminate_backend` of the connection running a query (57P01 or CONNECTION_CLOSED). */
let terminated: unknown;
/** A real syntax error (42601): a bug, not an outage. */
let syntaxError: unknown;
/** Where no PostgreSQL listens: what a stopped server looks like to a client. */
let stoppedUrl: string;

async function failureOf(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

beforeAll(async () => {
  shared = await createTestDatabase('api_transport_errors');
  const victim = postgres(shared.url, { max: 1, onnotice: () => {} });
  const admin = postgres(shared.adminUrl, { max: 1, onnotice: () => {} });
  try {
    const [row] = await victim<{ pid: number }[]>`select pg_backend_pid() as pid`;
    const sleeping = failureOf(() => victim`select pg_sleep(10)`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await admin`select pg_terminate_backend(${row!.pid})`;
    terminated = await sleeping;
    syntaxError = await failureOf(() => admin`selec 1`);
  } finally {
    await victim.end({ timeout: 1 });
    await admin.end({ timeout: 1 });
  }
  stoppedUrl = `postgres://postgres:password@127.0.0.1:${await findFreePort()}/once`;
}, 60_000);

afterAll(async () => {
  await shared?.drop();
});

describe('refusalOf: the one classifier of what an error means to a client', () => {
  it('a terminated connection (real) is store unavailable, retry in 2 s (the guard’s own Retry-After)', () => {
    // The driver reports the server's 57P01 or, when the socket closes first, CONNECTION_CLOSED.
    expect(['57P01', 'CONNECTION_CLOSED']).toContain((terminated as { code?: string }).code);
    const refusal = refusalOf(terminated);
    expect(isIdempotencyError(refusal)).toBe(true);
    expect(refusal).toMatchObject({ code: 'idempotency_store_unavailable', retryAfterSeconds: 2 });
  });

  it.each([
    ['admin shutdown', { code: '57P01' }],
    ['crash shutdown', { code: '57P02' }],
    ['starting up / shutting down', { code: '57P03' }],
    ['connection exception (08006)', { code: '08006' }],
    ['connection refused', { code: 'ECONNREFUSED' }],
    ['connection closed (postgres.js)', { code: 'CONNECTION_CLOSED' }],
    [
      'a Drizzle "Failed query" wrapping a refused connection',
      Object.assign(new Error('Failed query: select "id", "name" from "tenants"'), {
        cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
          code: 'ECONNREFUSED',
        }),
      }),
    ],
  ])('%s is store unavailable', (_name, error) => {
    expect(refusalOf(error)).toMatchObject({ code: 'idempotency_store_unavailable' });
  });

  it('an API refusal and an idempotency refusal stay what they are', () => {
    const api = new ApiError('unknown_product');
    expect(refusalOf(api)).toBe(api);
    const busy = new IdempotencyError('idempotency_key_in_use', { retryAfterSeconds: 2 });
    expect(refusalOf(busy)).toBe(busy);
  });

  it('a bug (a real syntax error, anything else) is no refusal: a 500 without details', () => {
    expect((syntaxError as { code?: string }).code).toBe('42601');
    expect(refusalOf(syntaxError)).toBeUndefined();
    expect(refusalOf(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe(
      undefined,
    );
  });

  it('REST: problem+json 503 with Retry-After, nothing of the SQL', async () => {
    const response = toProblemResponse(terminated)!;
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('retry-after')).toBe('2');
    const text = await response.text();
    expect(JSON.parse(text)).toMatchObject({ code: 'idempotency_store_unavailable', status: 503 });
    expect(text).not.toMatch(/pg_sleep|terminat|select/i);
    expect(toProblemResponse(syntaxError)).toBeUndefined();
  });
});

describe('tRPC over HTTP with PostgreSQL stopped', () => {
  /** The web's tRPC endpoint over this deployment: the same router, context and formatter. */
  async function trpcPost(path: string, input: unknown, headers: Record<string, string>) {
    const client = createDatabaseClient(stoppedUrl, { applicationName: 'once-api-test', max: 1 });
    try {
      const deps = createApiDependencies({
        db: client.db,
        sessionSecret: TEST_SESSION_SECRET,
        allowDemoLogin: true,
      });
      const req = new Request(`http://localhost/api/trpc/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(input),
      });
      const response = await fetchRequestHandler({
        endpoint: '/api/trpc',
        req,
        router: appRouter,
        createContext: ({ req, resHeaders }) => createContext({ req, resHeaders, ...deps }),
      });
      return { response, text: await response.text() };
    } finally {
      await client.close();
    }
  }

  it.each([
    [
      'checkout.pay (authentication reads the tenant first)',
      'checkout.pay',
      { lines: [{ productId: 'book_sre', quantity: 1 }] },
      { authorization: 'Bearer once_test_tenant_a', 'idempotency-key': 'outage-key-1' },
    ],
    [
      'session.start (the demo login looks the tenant up)',
      'session.start',
      { demoTenantId: 'tenant_a', role: 'shopper' },
      {},
    ],
  ])(
    '%s: 503 idempotency_store_unavailable with Retry-After',
    async (_name, path, input, headers) => {
      const { response, text } = await trpcPost(path, input, headers);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('2');
      const body = JSON.parse(text) as {
        error: { message: string; data: { code: string; httpStatus: number } };
      };
      expect(body.error.data).toMatchObject({
        code: 'idempotency_store_unavailable',
        httpStatus: 503,
      });
      expect(text).not.toMatch(/Failed query|tenants|ECONNREFUSED|127\.0\.0\.1/);
    },
    30_000,
  );
});
