import { IDEMPOTENT_REPLAYED_HEADER } from '../../core/key.ts';
import type { StoredResponse } from '../../core/types.ts';

/** Headers replayed by default: describe the body, never the session. */
export const DEFAULT_REPLAY_HEADERS = ['content-type', 'location', 'content-language'];

// Cookies belong to the request that set them; replaying them would hand one client's session to another.
const NEVER_STORED = new Set(['set-cookie', 'set-cookie2']);

/**
 * Snapshot a `Response` for storage: status, UTF-8 body, and only allow-listed headers
 * (`Set-Cookie` is dropped even if allow-listed). Reads a clone; the original stays usable.
 * A `text/event-stream` response is refused (throws) instead of being read until it ends.
 */
export function storedResponseFrom(
  response: Response,
  allowList: readonly string[] = DEFAULT_REPLAY_HEADERS,
): Promise<StoredResponse> {
  return storedResponseTaker(allowList)(response.body === null ? response : response.clone());
}

/**
 * Snapshot a `Response` for storage by reading its own body (no clone: it is consumed), for an
 * adapter that sends `resendable(response, stored)` in its place. Internal.
 */
export function storedResponseTaker(
  allowList: readonly string[] = DEFAULT_REPLAY_HEADERS,
  maxBodyBytes = Number.POSITIVE_INFINITY,
): (response: Response) => Promise<StoredResponse> {
  const names = [...new Set(allowList.map((name) => name.toLowerCase()))].filter(
    (name) => !NEVER_STORED.has(name),
  );
  return async (response) => {
    const headers: Record<string, string> = {};
    for (const name of names) {
      const value = response.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    const text = response.body === null ? null : await readBody(response, maxBodyBytes);
    return { status: response.status, headers, body: text };
  };
}

/**
 * Why a response body cannot be stored: an event stream (never read: it may not end), or a
 * body over the cap (read up to the cap and one chunk past it, no further). The body is
 * cancelled either way. Internal: adapters turn it into the error their path needs.
 */
export class UnstorableBody extends Error {
  constructor(readonly reason: 'event-stream' | 'too-large') {
    super(
      reason === 'event-stream'
        ? 'A text/event-stream response cannot be stored for replay'
        : 'The response body exceeds maxResponseBytes',
    );
    this.name = 'UnstorableBody';
  }
}

/** Read a body as UTF-8, refusing an event stream unread and stopping past `maxBytes`. */
async function readBody(response: Response, maxBytes: number): Promise<string> {
  const body = response.body as ReadableStream<Uint8Array>;
  if (/^\s*text\/event-stream/i.test(response.headers.get('content-type') ?? '')) {
    body.cancel().catch(() => {});
    throw new UnstorableBody('event-stream');
  }
  if (maxBytes === Number.POSITIVE_INFINITY) return response.text();
  const reader = body.getReader();
  // Read chunk by chunk so a body past the cap is never read whole (`stream` keeps a character
  // split across chunks whole).
  const decoder = new TextDecoder();
  let text = '';
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      // Not awaited: a source whose cancel never settles must not hold the answer either.
      reader.cancel().catch(() => {});
      throw new UnstorableBody('too-large');
    }
    text += decoder.decode(value, { stream: true });
  }
  return text + decoder.decode();
}

/**
 * The response a guard sends for one whose body `storedResponseTaker` read: the same status,
 * status text and every header (not only the stored ones), with the body text read. A
 * response without a body was not consumed and is sent as it is.
 */
export function resendable(response: Response, stored: StoredResponse): Response {
  if (response.body === null) return response;
  return new Response(stored.body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/**
 * A JSON answer in the form `exec.complete` stores (status, the replayed headers, the body
 * text), built once by the route. Completing with it instead of a `Response` spares the guard
 * reading a body stream and building a second `Response`; send `responseOf(stored)`. Put only
 * headers to replay in `headers`; others go to `responseOf`.
 */
export function storedJson(
  value: unknown,
  init: { status?: number; headers?: Record<string, string> } = {},
): StoredResponse {
  return {
    status: init.status ?? 200,
    headers: { 'content-type': 'application/json', ...init.headers },
    body: JSON.stringify(value),
  };
}

/**
 * The `Response` of a stored form as the first request gets it (no `Idempotent-Replayed`),
 * with `headers` that are sent but not stored.
 */
export function responseOf(stored: StoredResponse, headers?: Record<string, string>): Response {
  return new Response(withoutBodyIfForbidden(stored), {
    status: stored.status,
    headers: headers ? { ...stored.headers, ...headers } : stored.headers,
  });
}

/** Rebuild a stored response with `Idempotent-Replayed: true`. */
export function replayedResponse(stored: StoredResponse): Response {
  const headers = new Headers(stored.headers);
  headers.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
  return new Response(withoutBodyIfForbidden(stored), { status: stored.status, headers });
}

/** 204/304 must not carry a body (the `Response` constructor refuses one). */
const withoutBodyIfForbidden = (stored: StoredResponse) =>
  stored.status === 204 || stored.status === 304 ? null : stored.body;
