import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCESSOR_MAX_BODY_BYTES } from './http/processor-app.ts';
import type { RunningProcessor } from './start-processor.ts';
import { adminClient } from './testing/admin-client.ts';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { startTestProcessor } from './testing/test-processor.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;

beforeAll(async () => {
  database = await createProcessorTestDatabase('body_limit');
  processor = await startTestProcessor({
    databaseUrl: database.url,
  });
});

afterAll(async () => {
  await processor?.stop();
  await database?.drop();
});

/** A valid charge whose metadata value pads the body past `bytes`. */
const paddedCharge = (bytes: number) =>
  `amount=1200&currency=usd&payment_method=pm_card_visa&confirm=true&metadata[pad]=${'x'.repeat(bytes)}`;

function post(key: string, body: string | ReadableStream<Uint8Array>, extra: RequestInit = {}) {
  return fetch(`${processor.url}/v1/payment_intents`, {
    method: 'POST',
    headers: {
      authorization: 'Bearer sk_test_tenant_a',
      'content-type': 'application/x-www-form-urlencoded',
      'idempotency-key': key,
    },
    body,
    ...extra,
  });
}

/** The same text as a chunked body (no Content-Length). */
function chunkedBody(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + 8192));
      offset += 8192;
    },
  });
}

/**
 * POSTs `body` with node:http, as `Content-Length` or chunked, and resolves with the status.
 * Not fetch: the server answers (and may close) while the client is still sending, and fetch
 * then reports a failed upload without showing the answer.
 */
function postRaw(key: string, body: string, framing: 'content-length' | 'chunked') {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; json: unknown }>(
    (resolve, reject) => {
      const request = http.request(`${processor.url}/v1/payment_intents`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer sk_test_tenant_a',
          'content-type': 'application/x-www-form-urlencoded',
          'idempotency-key': key,
          ...(framing === 'content-length' ? { 'content-length': Buffer.byteLength(body) } : {}),
        },
      });
      let answered = false;
      request.on('response', (response) => {
        answered = true;
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          // The header-only request never sends its body: drop it once answered.
          if (framing === 'content-length') request.destroy();
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            json: JSON.parse(Buffer.concat(chunks).toString('utf8')),
          });
        });
      });
      request.on('error', (error) => {
        // A reset after the answer arrived is expected; before it, it is a failure.
        if (!answered) reject(error);
      });
      if (framing === 'content-length') {
        // Only the headers: the answer must come from the declared length alone, before any
        // byte of the body is read (the body is never sent; the request is dropped after).
        request.flushHeaders();
        return;
      }
      expect(request.getHeader('content-length')).toBeUndefined();
      for (let offset = 0; offset < body.length; offset += 8192) {
        request.write(body.slice(offset, offset + 8192));
      }
      request.end();
    },
  );
}

describe(`request bodies over ${PROCESSOR_MAX_BODY_BYTES} bytes`, () => {
  it('are refused 413 in Stripe error shape by Content-Length, and nothing is charged', async () => {
    const key = randomUUID();
    const refused = await postRaw(key, paddedCharge(PROCESSOR_MAX_BODY_BYTES), 'content-length');
    expect(refused.status).toBe(413);
    expect(refused.headers['stripe-should-retry']).toBe('false');
    expect(refused.json).toMatchObject({
      error: { type: 'invalid_request_error', code: 'payload_too_large' },
    });
    expect(await adminClient(processor.url).ledger({ idempotency_key: key })).toMatchObject({
      data: [],
    });
  });

  it('are refused 413 when sent chunked without Content-Length, and nothing is charged', async () => {
    const key = randomUUID();
    const refused = await postRaw(key, paddedCharge(PROCESSOR_MAX_BODY_BYTES), 'chunked');
    expect(refused.status).toBe(413);
    expect(refused.json).toMatchObject({ error: { code: 'payload_too_large' } });
    expect(await adminClient(processor.url).ledger({ idempotency_key: key })).toMatchObject({
      data: [],
    });
  });

  it('a chunked body within the limit is still read and charged', async () => {
    const key = randomUUID();
    const response = await post(key, chunkedBody(paddedCharge(400)), {
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { status: string }).status).toBe('succeeded');
  });
});
