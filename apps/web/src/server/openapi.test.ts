import { randomUUID } from 'node:crypto';
import { API_PROBLEM_TYPE_BASE, apiErrorCatalogue } from '@once/api/errors';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { IDEMPOTENCY_ERRORS } from '@once/idempotency/fetch';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from './openapi.ts';
import { startWebRuntime } from './runtime.ts';
import {
  documentedProblems,
  type ObservedResponse,
  observe,
  openApiViolations,
} from './testing/openapi-contract.ts';
import { type ServedHandler, serveFetch } from './testing/serve-fetch.ts';
import { webApiRoutes } from './testing/web-routes.ts';
import { startWebTestServer, type WebTestServer } from './testing/web-test-server.ts';

/**
 * Real responses of the REST routes, over real HTTP, checked against `openapi/payments.json`:
 * a status, header or body the description does not allow fails the test.
 */
describe('the OpenAPI description matches what the REST API answers', () => {
  let database: TestDatabase;
  let server: ServedHandler;
  let web: WebTestServer | undefined;
  const auth = { authorization: 'Bearer once_test_tenant_a' };
  const cart = { lines: [{ productId: 'book_sre', quantity: 1 }] };

  beforeAll(async () => {
    web = await startWebTestServer('web_openapi', {
      SESSION_SECRET: 'openapi-test-session-secret-0123',
      ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '0',
    });
    ({ database, server } = web);
  });
  afterAll(async () => {
    await web?.close();
  });

  const post = async (headers: Record<string, string>, body: unknown) =>
    observe(
      await fetch(`${server.url}/api/v1/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    );
  const get = async (path: string, headers: Record<string, string> = auth) =>
    observe(await fetch(`${server.url}${path}`, { headers }));
  const expectConforms = (method: string, path: string, response: ObservedResponse) =>
    expect(openApiViolations(method, path, response)).toEqual([]);
  const codeOf = (response: ObservedResponse) =>
    (JSON.parse(response.body) as { code: string }).code;

  it('created, replayed and read back', async () => {
    const key = randomUUID();
    const created = await post({ ...auth, 'idempotency-key': key }, cart);
    expect(created.status).toBe(201);
    expectConforms('POST', '/api/v1/payments', created);
    const replayed = await post({ ...auth, 'idempotency-key': key }, cart);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expectConforms('POST', '/api/v1/payments', replayed);
    const location = created.headers.get('location')!;
    const read = await get(location);
    expect(read.status).toBe(200);
    expectConforms('GET', location, read);
  });

  /** A payment moved as the worker records the processor's answer: authorised, or succeeded. */
  async function paymentIn(status: 'authorized' | 'succeeded'): Promise<string> {
    const captureMethod = status === 'authorized' ? 'manual' : 'automatic';
    const created = await post(
      { ...auth, 'idempotency-key': randomUUID() },
      { ...cart, captureMethod },
    );
    const { paymentId } = JSON.parse(created.body) as { paymentId: string };
    await database.client.sql`update payments set status = ${status} where id = ${paymentId}`;
    return paymentId;
  }
  const act = async (path: string, key: string | undefined, body?: unknown, who = auth) =>
    observe(
      await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: {
          ...who,
          ...(key === undefined ? {} : { 'idempotency-key': key }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );

  it('capture, cancel and refunds: accepted, replayed, listed and read back', async () => {
    const authorized = await paymentIn('authorized');
    const read = await get(`/api/v1/payments/${authorized}`);
    expect(JSON.parse(read.body)).toMatchObject({ status: 'requires_capture' });
    expectConforms('GET', `/api/v1/payments/${authorized}`, read);
    const key = randomUUID();
    for (const _ of [1, 2]) {
      const captured = await act(`/api/v1/payments/${authorized}/capture`, key, { amount: 100 });
      expect(captured.status).toBe(202);
      expectConforms('POST', `/api/v1/payments/${authorized}/capture`, captured);
    }
    const toCancel = await paymentIn('authorized');
    const canceled = await act(`/api/v1/payments/${toCancel}/cancel`, randomUUID());
    expect(canceled.status).toBe(202);
    expectConforms('POST', `/api/v1/payments/${toCancel}/cancel`, canceled);
    const succeeded = await paymentIn('succeeded');
    const refundsPath = `/api/v1/payments/${succeeded}/refunds`;
    const refunded = await act(refundsPath, randomUUID(), { amount: 100, reason: 'duplicate' });
    expect(refunded.status).toBe(202);
    expectConforms('POST', refundsPath, refunded);
    const listed = await get(refundsPath);
    expect(JSON.parse(listed.body).refunds).toHaveLength(1);
    expectConforms('GET', refundsPath, listed);
    for (const [status, extra] of [
      ['requires_action', `, next_action_url = 'http://localhost:4000/3ds/pi_1'`],
      ['captured', ', amount_captured = 100'],
      ['voided', ''],
      ['canceled', ''],
    ] as const) {
      await database.client.sql.unsafe(
        `update payments set status = '${status}'${extra} where id = '${toCancel}'`,
      );
      const view = await get(`/api/v1/payments/${toCancel}`);
      expectConforms('GET', `/api/v1/payments/${toCancel}`, view);
    }
  });

  it('every refusal of capture, cancel and refunds is a documented problem+json', async () => {
    const authorized = await paymentIn('authorized');
    const succeeded = await paymentIn('succeeded');
    const key = randomUUID();
    await act(`/api/v1/payments/${authorized}/capture`, key);
    const refusals: [string, string, ObservedResponse][] = [
      [
        'capture',
        'payment_not_authorized',
        await act(`/api/v1/payments/${authorized}/capture`, randomUUID()),
      ],
      [
        'capture',
        'idempotency_key_reused',
        await act(`/api/v1/payments/${authorized}/capture`, key, { amount: 1 }),
      ],
      [
        'capture',
        'capture_amount_too_large',
        await act(`/api/v1/payments/${await paymentIn('authorized')}/capture`, randomUUID(), {
          amount: 10_000_000,
        }),
      ],
      [
        'capture',
        'payment_not_found',
        await act('/api/v1/payments/pay_missing/capture', randomUUID()),
      ],
      [
        'capture',
        'idempotency_key_missing',
        await act(`/api/v1/payments/${authorized}/capture`, undefined),
      ],
      [
        'capture',
        'invalid_input',
        await act(`/api/v1/payments/${authorized}/capture`, randomUUID(), { amount: -1 }),
      ],
      [
        'capture',
        'unauthenticated',
        await act(
          `/api/v1/payments/${authorized}/capture`,
          randomUUID(),
          undefined,
          {} as typeof auth,
        ),
      ],
      [
        'cancel',
        'payment_not_authorized',
        await act(`/api/v1/payments/${succeeded}/cancel`, randomUUID()),
      ],
      [
        'refunds',
        'payment_not_refundable',
        await act(`/api/v1/payments/${authorized}/refunds`, randomUUID()),
      ],
      [
        'refunds',
        'refund_amount_too_large',
        await act(`/api/v1/payments/${succeeded}/refunds`, randomUUID(), { amount: 10_000_000 }),
      ],
      [
        'refunds',
        'payment_not_found',
        await act(`/api/v1/payments/${succeeded}/refunds`, randomUUID(), undefined, {
          authorization: 'Bearer once_test_tenant_b',
        }),
      ],
    ];
    for (const [action, code, response] of refusals) {
      expect(codeOf(response), `${action} ${code}`).toBe(code);
      const paymentId = action === 'cancel' ? succeeded : authorized;
      expectConforms('POST', `/api/v1/payments/${paymentId}/${action}`, response);
    }
    const unsupported = observe(
      await fetch(`${server.url}/api/v1/payments/${succeeded}/refunds`, {
        method: 'POST',
        headers: { ...auth, 'idempotency-key': randomUUID(), 'content-type': 'text/plain' },
        body: 'amount=1',
      }),
    );
    expect(codeOf(await unsupported)).toBe('unsupported_media_type');
    expectConforms('POST', `/api/v1/payments/${succeeded}/refunds`, await unsupported);
    const missing = await get('/api/v1/payments/pay_missing/refunds');
    expect(codeOf(missing)).toBe('payment_not_found');
    expectConforms('GET', '/api/v1/payments/pay_missing/refunds', missing);
  });

  it('every refusal it can produce here is a documented problem+json', async () => {
    const key = randomUUID();
    await post({ ...auth, 'idempotency-key': key }, cart);
    const refusals: [string, string, ObservedResponse][] = [
      ['POST', 'idempotency_key_missing', await post(auth, cart)],
      [
        'POST',
        'idempotency_key_invalid',
        await post({ ...auth, 'idempotency-key': 'x'.repeat(256) }, cart),
      ],
      ['POST', 'invalid_input', await post({ ...auth, 'idempotency-key': randomUUID() }, '{')],
      [
        'POST',
        'unknown_product',
        await post(
          { ...auth, 'idempotency-key': randomUUID() },
          { lines: [{ productId: 'x', quantity: 1 }] },
        ),
      ],
      [
        'POST',
        'quantity_out_of_range',
        await post(
          { ...auth, 'idempotency-key': randomUUID() },
          { lines: [{ productId: 'book_sre', quantity: 0 }] },
        ),
      ],
      [
        'POST',
        'empty_cart',
        await post({ ...auth, 'idempotency-key': randomUUID() }, { lines: [] }),
      ],
      ['POST', 'unauthenticated', await post({ 'idempotency-key': randomUUID() }, cart)],
      [
        'POST',
        'invalid_credentials',
        await post({ authorization: 'Bearer nope', 'idempotency-key': randomUUID() }, cart),
      ],
      [
        'POST',
        'idempotency_key_reused',
        await post(
          { ...auth, 'idempotency-key': key },
          { lines: [{ productId: 'mug', quantity: 1 }] },
        ),
      ],
      ['GET', 'payment_not_found', await get('/api/v1/payments/pay_missing')],
      ['GET', 'unauthenticated', await get('/api/v1/payments/pay_missing', {})],
    ];
    for (const [method, code, response] of refusals) {
      expect(codeOf(response), `${method} ${code}`).toBe(code);
      const path = method === 'GET' ? '/api/v1/payments/pay_missing' : '/api/v1/payments';
      expectConforms(method, path, response);
    }
  });

  it('503 (store unreachable) and 429 (rate limited) carry Retry-After as documented', async () => {
    // The key store stops answering: a transaction holds an exclusive lock on its table, so
    // the store call outlives its timeout and the route fails closed.
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked: () => void = () => {};
    const lockHeld = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const holder = database.client.sql.begin(async (tx) => {
      await tx`lock table idempotency_keys in access exclusive mode`;
      locked();
      await released;
    });
    try {
      await lockHeld;
      const unavailable = await post({ ...auth, 'idempotency-key': randomUUID() }, cart);
      expect(codeOf(unavailable)).toBe('idempotency_store_unavailable');
      expectConforms('POST', '/api/v1/payments', unavailable);
    } finally {
      release();
      await holder;
    }

    const limitedDb = await createTestDatabase('web_openapi_limits');
    const limited = await startWebRuntime({
      DATABASE_URL: limitedDb.url,
      SESSION_SECRET: 'openapi-test-session-secret-0123',
      ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '1',
    });
    const served = await serveFetch(webApiRoutes(async () => limited));
    try {
      const pay = async () =>
        observe(
          await fetch(`${served.url}/api/v1/payments`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              ...auth,
              'idempotency-key': randomUUID(),
            },
            body: JSON.stringify(cart),
          }),
        );
      expect((await pay()).status).toBe(201);
      const rateLimited = await pay();
      expect(codeOf(rateLimited)).toBe('idempotency_rate_limited');
      expectConforms('POST', '/api/v1/payments', rateLimited);
    } finally {
      await served.close();
      await limited.client.close();
      await limitedDb.drop();
    }
  });

  it('a response that breaks the description is caught (the check is not vacuous)', async () => {
    const created = await post({ ...auth, 'idempotency-key': randomUUID() }, cart);
    const body = JSON.parse(created.body) as Record<string, unknown>;
    const tampered = (change: Partial<ObservedResponse>): ObservedResponse => ({
      ...created,
      ...change,
    });
    const violations = (response: ObservedResponse) =>
      openApiViolations('POST', '/api/v1/payments', response);
    expect(
      violations(tampered({ body: JSON.stringify({ ...body, amount: '12.00' }) })),
    ).not.toEqual([]);
    expect(violations(tampered({ body: JSON.stringify({ ...body, extra: 1 }) }))).not.toEqual([]);
    expect(violations(tampered({ status: 418 }))).not.toEqual([]);
    const noLocation = new Headers(created.headers);
    noLocation.delete('location');
    expect(violations(tampered({ headers: noLocation }))).not.toEqual([]);
    const problemWithWrongType = {
      status: 422,
      headers: new Headers({ 'content-type': 'application/problem+json' }),
      body: JSON.stringify({
        type: 'https://once.dev/problems/idempotency#idempotency_key_in_use',
        title: 'x',
        status: 422,
        code: 'idempotency_key_reused',
      }),
    };
    expect(violations(problemWithWrongType)).not.toEqual([]);
  });

  it('documents each problem with the type URI and status the code maps to', () => {
    const problems = documentedProblems();
    for (const [code, { type, status }] of problems) {
      if (code in IDEMPOTENCY_ERRORS) {
        const mapping = IDEMPOTENCY_ERRORS[code as keyof typeof IDEMPOTENCY_ERRORS];
        expect({ code, type, status }).toEqual({
          code,
          type: mapping.type,
          status: mapping.status,
        });
      } else if (code in apiErrorCatalogue) {
        const mapping = apiErrorCatalogue[code as keyof typeof apiErrorCatalogue];
        expect({ code, type, status }).toEqual({
          code,
          type: `${API_PROBLEM_TYPE_BASE}${code}`,
          status: mapping.status,
        });
      } else {
        // Answered by the route itself before the body is read (size and media type).
        expect(['payload_too_large', 'unsupported_media_type']).toContain(code);
        expect(type).toBe(`${API_PROBLEM_TYPE_BASE}${code}`);
      }
    }
    // Every refusal a REST client can meet (checkout, capture, cancel, refund) is documented
    // (session ones, the ops.* role check, the cockpit's key operations and the demo's chaos
    // switches are tRPC-only: REST takes only API keys).
    const tRpcOnly = new Set([
      'demo_login_disabled',
      'demo_operator_login_disabled',
      'operator_code_invalid',
      'session_rate_limited',
      'operator_required',
      'operator_code_required',
      'idempotency_key_not_found',
      'idempotency_key_changed',
      'idempotency_key_not_releasable',
      'idempotency_key_not_evictable',
      'webhook_event_not_found',
    ]);
    const restCodes = Object.keys(apiErrorCatalogue).filter(
      (c) => !tRpcOnly.has(c) && !c.startsWith('chaos_'),
    );
    for (const code of restCodes) expect(problems.has(code), code).toBe(true);
  });

  it('is a valid OpenAPI 3.1 document (checked against the schema of the specification)', async () => {
    const validator = new Validator();
    const result = await validator.validate(
      structuredClone(openApiDocument) as Record<string, unknown>,
    );
    expect(result.errors ?? []).toEqual([]);
    expect(validator.version).toBe('3.1');
  });

  it('serves the description itself at /api/openapi', async () => {
    const served = await get('/api/openapi', {});
    expect(served.status).toBe(200);
    expect(JSON.parse(served.body)).toMatchObject({ openapi: '3.1.0' });
    expectConforms('GET', '/api/openapi', served);
  });
});
