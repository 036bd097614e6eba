import { randomUUID } from 'node:crypto';
import type { AppRouter } from '@once/api';
import type { TestDatabase } from '@once/db/testing';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { API_MAX_BODY_BYTES, WEBHOOK_MAX_BODY_BYTES } from './body-limit.ts';
import type { WebRuntime } from './runtime.ts';
import type { ServedHandler } from './testing/serve-fetch.ts';
import { webApiRoutes } from './testing/web-routes.ts';
import { startWebTestServer, type WebTestServer } from './testing/web-test-server.ts';

const WEBHOOK_SECRET = 'whsec_test_limits';

/** A body sent without Content-Length (Transfer-Encoding: chunked), in pieces. */
function chunked(text: string): { body: ReadableStream<Uint8Array>; duplex: 'half' } {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return {
    body: new ReadableStream({
      pull(controller) {
        if (offset >= bytes.byteLength) return controller.close();
        controller.enqueue(bytes.slice(offset, offset + 4096));
        offset += 4096;
      },
    }),
    duplex: 'half',
  };
}

/** A body whose sender disconnects after `start`: what Node hands a route when the socket resets. */
function disconnectingBody(start: string): { body: ReadableStream<Uint8Array>; duplex: 'half' } {
  return {
    body: new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(start));
      },
      pull(controller) {
        controller.error(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
      },
    }),
    duplex: 'half',
  };
}

/** Valid JSON of a checkout padded past `bytes` with whitespace (valid, but too large). */
const oversizedCart = (bytes: number) =>
  `{"lines":[{"productId":"espresso_beans","quantity":1}]${' '.repeat(bytes)}}`;

describe('request limits: 415 and 413 before anything is parsed, stored or counted', () => {
  let database: TestDatabase;
  let runtime: WebRuntime;
  let server: ServedHandler;
  let web: WebTestServer | undefined;

  beforeAll(async () => {
    web = await startWebTestServer('web_limits', {
      SESSION_SECRET: 'limits-test-session-secret-0123',
      PROCESSOR_WEBHOOK_SECRET: WEBHOOK_SECRET,
    });
    ({ database, runtime, server } = web);
  });
  afterAll(async () => {
    await web?.close();
  });
  beforeEach(async () => {
    await database.client
      .sql`truncate payments, outbox_jobs, idempotency_keys, idempotency_rate_limits`;
  });

  /** Everything a refused request must leave untouched: payments, keys, the new-key counter. */
  async function written() {
    const [row] = await database.client.sql<{ payments: number; keys: number; counted: number }[]>`
      select (select count(*)::int from payments) as payments,
             (select count(*)::int from idempotency_keys) as keys,
             (select count(*)::int from idempotency_rate_limits
               where theoretical_arrival > now()) as counted`;
    return row!;
  }
  const nothing = { payments: 0, keys: 0, counted: 0 };

  describe('REST POST /api/v1/payments', () => {
    const auth = { authorization: 'Bearer once_test_tenant_b' };
    const post = (headers: Record<string, string>, init: RequestInit) =>
      fetch(`${server.url}/api/v1/payments`, {
        method: 'POST',
        ...init,
        headers: { ...auth, 'idempotency-key': randomUUID(), ...headers },
      });

    it('415 problem+json for a form-encoded body, and two different form carts never replay each other', async () => {
      const key = randomUUID();
      for (const quantity of [1, 2]) {
        const response = await post(
          {
            'content-type': 'application/x-www-form-urlencoded',
            'idempotency-key': key,
          },
          { body: `lines[0][productId]=espresso_beans&lines[0][quantity]=${quantity}` },
        );
        expect(response.status).toBe(415);
        expect(response.headers.get('content-type')).toBe('application/problem+json');
        expect(await response.json()).toMatchObject({
          type: 'https://once.dev/problems/unsupported_media_type',
          code: 'unsupported_media_type',
          status: 415,
          details: { accepted: ['application/json'] },
        });
      }
      expect(await written()).toEqual(nothing);
    });

    it.each([
      ['text/plain', 'text/plain'],
      ['multipart/form-data', 'multipart/form-data; boundary=x'],
      ['application/json with another charset', 'application/json; charset=latin1'],
      ['application/jsonx', 'application/jsonx'],
    ])('415 for %s', async (_label, type) => {
      const response = await post(
        { 'content-type': type },
        { body: '{"lines":[{"productId":"espresso_beans","quantity":1}]}' },
      );
      expect(response.status).toBe(415);
      expect(await written()).toEqual(nothing);
    });

    it('a client that disconnects mid-body gets request_body_incomplete, not "database unavailable"; nothing is written', async () => {
      const routes = webApiRoutes(async () => runtime);
      const response = await routes(
        new Request('http://web.test/api/v1/payments', {
          method: 'POST',
          headers: { ...auth, 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
          ...disconnectingBody('{"lines":[{"productId":'),
        } as RequestInit),
      );
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        code: 'request_body_incomplete',
        details: { cause: 'ECONNRESET' },
      });
      expect(await written()).toEqual(nothing);
    });

    it('415 without a Content-Type at all', async () => {
      const response = await post({}, { body: new Uint8Array([123, 125]) });
      expect(response.status).toBe(415);
      expect(await written()).toEqual(nothing);
    });

    it('accepts application/json in any case and with charset=utf-8', async () => {
      const response = await post(
        { 'content-type': 'Application/JSON; charset="UTF-8"' },
        { body: '{"lines":[{"productId":"espresso_beans","quantity":1}]}' },
      );
      expect(response.status).toBe(201);
    });

    it('413 by Content-Length, before authentication or any read', async () => {
      const response = await post(
        { 'content-type': 'application/json', authorization: 'Bearer not-even-checked' },
        { body: oversizedCart(API_MAX_BODY_BYTES) },
      );
      expect(response.status).toBe(413);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
      expect(await response.json()).toMatchObject({
        type: 'https://once.dev/problems/payload_too_large',
        code: 'payload_too_large',
        status: 413,
        details: { maxBytes: API_MAX_BODY_BYTES },
      });
      expect(await written()).toEqual(nothing);
    });

    it('413 for a chunked body without Content-Length, counted as it is read', async () => {
      const response = await post(
        { 'content-type': 'application/json' },
        chunked(oversizedCart(API_MAX_BODY_BYTES)) as RequestInit,
      );
      expect(response.status).toBe(413);
      expect(await response.json()).toMatchObject({ code: 'payload_too_large' });
      expect(await written()).toEqual(nothing);
    });

    it('a chunked body within the limit is read and paid', async () => {
      const response = await post(
        { 'content-type': 'application/json' },
        chunked(oversizedCart(1000)) as RequestInit,
      );
      expect(response.status).toBe(201);
    });

    it('an over-long cart is 400 invalid_input with a clear issue, nothing stored or counted', async () => {
      const lines = Array.from({ length: 51 }, () => ({
        productId: 'espresso_beans',
        quantity: 1,
      }));
      const response = await post(
        { 'content-type': 'application/json' },
        { body: JSON.stringify({ lines }) },
      );
      expect(response.status).toBe(400);
      const problem = await response.json();
      expect(problem.code).toBe('invalid_input');
      expect(problem.details.issues[0].message).toBe('a cart has at most 50 lines');
      expect(await written()).toEqual(nothing);
    });
  });

  describe('tRPC /api/trpc', () => {
    const headers = { authorization: 'Bearer once_test_tenant_a' };
    const url = () => `${server.url}/api/trpc/checkout.pay`;

    it('413 in tRPC error shape by Content-Length; no procedure runs', async () => {
      const response = await fetch(url(), {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': 'k' },
        body: oversizedCart(API_MAX_BODY_BYTES),
      });
      expect(response.status).toBe(413);
      const body = await response.json();
      expect(body.error.data).toMatchObject({
        code: 'payload_too_large',
        httpStatus: 413,
        trpcCode: 'PAYLOAD_TOO_LARGE',
      });
      expect(await written()).toEqual(nothing);
    });

    it('413 for a chunked body without Content-Length', async () => {
      const response = await fetch(url(), {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': 'k' },
        ...(chunked(oversizedCart(API_MAX_BODY_BYTES)) as RequestInit),
      });
      expect(response.status).toBe(413);
      expect((await response.json()).error.data.code).toBe('payload_too_large');
      expect(await written()).toEqual(nothing);
    });

    it('the tRPC client sees a TRPCClientError with data.code payload_too_large', async () => {
      const local = createTRPCClient<AppRouter>({
        links: [
          httpLink({
            url: `${server.url}/api/trpc`,
            headers: () => ({ ...headers, 'idempotency-key': randomUUID() }),
          }),
        ],
      });
      const error = await local.checkout.pay
        .mutate({
          lines: [{ productId: 'x'.repeat(API_MAX_BODY_BYTES), quantity: 1 }],
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TRPCClientError);
      expect((error as TRPCClientError<AppRouter>).data).toMatchObject({
        code: 'payload_too_large',
        httpStatus: 413,
      });
    });
  });

  describe('GraphQL POST /api/graphql', () => {
    it('a client that disconnects mid-body gets request_body_incomplete (400), as REST does; nothing is written', async () => {
      const response = await webApiRoutes(async () => runtime)(
        new Request('http://web.test/api/graphql', {
          method: 'POST',
          headers: {
            authorization: 'Bearer once_test_tenant_b',
            'idempotency-key': randomUUID(),
            'content-type': 'application/json',
          },
          ...disconnectingBody('{"query":"mutation { pay('),
        } as RequestInit),
      );
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        errors: [{ extensions: { code: 'request_body_incomplete' } }],
      });
      expect(await written()).toEqual(nothing);
    });
  });

  describe('processor webhook receiver', () => {
    it('413 by Content-Length and for a chunked body, before the signature is checked', async () => {
      const payload = JSON.stringify({ id: 'evt_big', pad: ' '.repeat(WEBHOOK_MAX_BODY_BYTES) });
      const signature = Stripe.webhooks.generateTestHeaderString({
        payload,
        secret: WEBHOOK_SECRET,
      });
      const sized = await fetch(`${server.url}/api/webhooks/processor`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': signature },
        body: payload,
      });
      expect(sized.status).toBe(413);
      expect(await sized.json()).toMatchObject({ code: 'payload_too_large' });
      const streamed = await fetch(`${server.url}/api/webhooks/processor`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': signature },
        ...(chunked(payload) as RequestInit),
      });
      expect(streamed.status).toBe(413);
      const [row] = await database.client.sql`select count(*)::int as n from idempotency_keys`;
      expect(row!.n).toBe(0);
    });
  });
});
