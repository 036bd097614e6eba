import { ApiError } from '@once/api/errors';

/**
 * Largest request body of the JSON APIs (`POST /api/v1/payments`, `/api/trpc`): 64 KiB. The
 * largest valid checkout (50 lines of 100-character ids, an email, a payment method) is under
 * 8 KiB; every other procedure takes less.
 */
export const API_MAX_BODY_BYTES = 64 * 1024;

/** Largest processor webhook body: 256 KiB (one event with its object; Stripe's are a few KiB). */
export const WEBHOOK_MAX_BODY_BYTES = 256 * 1024;

/**
 * The refusal of a body over `maxBytes`: `payload_too_large` (413). Carries the limit so a
 * client can tell what it may send.
 *
 * @example
 * throw payloadTooLarge(API_MAX_BODY_BYTES);
 */
export function payloadTooLarge(maxBytes: number): ApiError {
  return new ApiError('payload_too_large', `The request body may be at most ${maxBytes} bytes`, {
    maxBytes,
  });
}

/**
 * Whether the request's `Content-Length` already says the body is over `maxBytes`, so it can
 * be refused without reading a byte. A missing header (chunked) answers false: the counted
 * read below still stops at the limit.
 *
 * @example
 * if (declaresBodyOver(request, API_MAX_BODY_BYTES)) throw payloadTooLarge(API_MAX_BODY_BYTES);
 */
export function declaresBodyOver(request: Request, maxBytes: number): boolean {
  const declared = request.headers.get('content-length');
  if (declared === null) return false;
  const length = Number(declared);
  // A malformed length is not trusted either way; the counted read decides.
  return Number.isFinite(length) && length > maxBytes;
}

/**
 * Reads the whole body, counting bytes as they arrive, and throws `payload_too_large` as soon
 * as the count passes `maxBytes` (the rest is never buffered: the stream is cancelled). Checks
 * `Content-Length` first. An absent body reads as zero bytes. A body that breaks off (the
 * client disconnected) is `request_body_incomplete` (400), never a 5xx.
 *
 * @example
 * const bytes = await readBodyWithinLimit(request, API_MAX_BODY_BYTES);
 */
export async function readBodyWithinLimit(
  request: Request,
  maxBytes: number,
): Promise<Uint8Array<ArrayBuffer>> {
  if (declaresBodyOver(request, maxBytes)) throw payloadTooLarge(maxBytes);
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

/**
 * `readBodyWithinLimit` decoded as UTF-8 text (invalid sequences become U+FFFD, and the JSON
 * parse that follows refuses them).
 *
 * @example
 * const payload = await readTextWithinLimit(request, WEBHOOK_MAX_BODY_BYTES);
 */
export async function readTextWithinLimit(request: Request, maxBytes: number): Promise<string> {
  return new TextDecoder().decode(await readBodyWithinLimit(request, maxBytes));
}
