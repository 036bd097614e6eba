import { ApiError } from '@once/api/errors';

/** Largest request body of the JSON APIs; the largest valid checkout is under 8 KiB. */
export const API_MAX_BODY_BYTES = 64 * 1024;

/** Largest processor webhook body: 256 KiB (one event with its object; Stripe's are a few KiB). */
export const WEBHOOK_MAX_BODY_BYTES = 256 * 1024;

function payloadTooLarge(maxBytes: number): ApiError {
  return new ApiError('payload_too_large', `The request body may be at most ${maxBytes} bytes`, {
    maxBytes,
  });
}

/**
 * Refuses (413) a request whose `Content-Length` already says the body is over `maxBytes`,
 * without reading a byte. A missing header (chunked) passes: the counted read still stops at
 * the limit.
 */
export function refuseDeclaredBodyOver(request: Request, maxBytes: number): void {
  const declared = request.headers.get('content-length');
  if (declared === null) return;
  const length = Number(declared);
  // A malformed length is not trusted either way; the counted read decides.
  if (Number.isFinite(length) && length > maxBytes) throw payloadTooLarge(maxBytes);
}

/**
 * Reads the whole body, counting bytes, and refuses as soon as the count passes `maxBytes` (the
 * rest is never buffered). A body that breaks off is `request_body_incomplete` (400), not a 5xx.
 */
async function readBodyWithinLimit(
  request: Request,
  maxBytes: number,
): Promise<Uint8Array<ArrayBuffer>> {
  refuseDeclaredBodyOver(request, maxBytes);
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch (error) {
      // The client's side of the body broke (it disconnected: Node reports `aborted`,
      // ECONNRESET). Nothing was read, nothing ran; not a fault of ours or of the database.
      throw new ApiError('request_body_incomplete', undefined, {
        cause: String((error as { code?: unknown }).code ?? (error as Error).message),
      });
    }
    const { done, value } = chunk;
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw payloadTooLarge(maxBytes);
    }
    chunks.push(value);
  }
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

/** As UTF-8 text (invalid sequences become U+FFFD, which the JSON parse then refuses). */
export async function readTextWithinLimit(request: Request, maxBytes: number): Promise<string> {
  return new TextDecoder().decode(await readBodyWithinLimit(request, maxBytes));
}

/**
 * The request a framework (tRPC, Yoga) gets: its body read once within
 * {@link API_MAX_BODY_BYTES}; GET and HEAD carry their input in the URL, which the server bounds.
 */
export async function boundedRequest(request: Request): Promise<Request> {
  if (request.method === 'GET' || request.method === 'HEAD' || request.body === null) {
    return request;
  }
  const body = await readBodyWithinLimit(request, API_MAX_BODY_BYTES);
  const headers = new Headers(request.headers);
  headers.delete('transfer-encoding');
  headers.set('content-length', String(body.byteLength));
  return new Request(request.url, {
    method: request.method,
    headers,
    body,
    signal: request.signal,
  });
}
