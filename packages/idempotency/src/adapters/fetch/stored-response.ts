import { IDEMPOTENT_REPLAYED_HEADER } from '../../core/key.ts';
import type { StoredResponse } from '../../core/types.ts';

/**
 * Headers replayed by default: describe the body, never the session.
 *
 * @example
 * withIdempotency(handler, { ...options, replayHeaders: [...DEFAULT_REPLAY_HEADERS, 'x-request-cost'] });
 */
export const DEFAULT_REPLAY_HEADERS = ['content-type', 'location', 'content-language'];

// Cookies belong to the request that set them; replaying them would hand one client's session to another.
const NEVER_STORED = new Set(['set-cookie', 'set-cookie2']);

/**
 * Snapshot a `Response` for storage: status, UTF-8 body, and only allow-listed headers
 * (`Set-Cookie` is dropped even if allow-listed). Reads a clone; the original stays usable.
 *
 * @example
 * const response = Response.json(payment, { status: 201 });
 * await exec.complete(tx, await storedResponseFrom(response));
 * return response;
 */
export function storedResponseFrom(
  response: Response,
  allowList: readonly string[] = DEFAULT_REPLAY_HEADERS,
): Promise<StoredResponse> {
  return storedResponseReader(allowList)(response);
}

/**
 * `storedResponseFrom` with the allow-list resolved once (an adapter builds one per service
 * instead of a Set per request). Headers are looked up by name rather than iterated.
 *
 * @example
 * const snapshot = storedResponseReader(['content-type']);
 * const stored = await snapshot(Response.json({ ok: true }));
 */
export function storedResponseReader(
  allowList: readonly string[] = DEFAULT_REPLAY_HEADERS,
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
    const text = response.body === null ? null : await response.clone().text();
    return { status: response.status, headers, body: text };
  };
}

/**
 * Rebuild a stored response with `Idempotent-Replayed: true`.
 *
 * @example
 * if (outcome.kind === 'replayed') return replayedResponse(outcome.response);
 */
export function replayedResponse(stored: StoredResponse): Response {
  const headers = new Headers(stored.headers);
  headers.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
  // 204/304 must not carry a body.
  const body = stored.status === 204 || stored.status === 304 ? null : stored.body;
  return new Response(body, { status: stored.status, headers });
}
