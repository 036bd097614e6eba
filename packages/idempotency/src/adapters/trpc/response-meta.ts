import { IdempotencyError } from '../../core/errors.ts';
import type { IDEMPOTENT_REPLAYED_HEADER } from '../../core/key.ts';

/**
 * The `responseMeta` of tRPC's standalone (Node) adapter: sends `ctx.resHeaders`, where the
 * plugin writes `Idempotent-Replayed` and `Retry-After`. The fetch adapter sends its
 * `resHeaders` by itself; the standalone adapter has none, so the context makes one.
 *
 * @example
 * createHTTPServer({ router, responseMeta: idempotencyResponseMeta,
 *   createContext: ({ req }) => ({ ..., resHeaders: new Headers() }) });
 */
export function idempotencyResponseMeta(opts: { ctx?: { resHeaders?: Headers } | undefined }): {
  headers?: Headers;
} {
  const headers = opts.ctx?.resHeaders;
  return headers ? { headers } : {};
}

let warnedAboutHeaders = false;

/**
 * Says once per process, in one line, that a header the client needs had nowhere to go: on the
 * standalone adapter a replay would otherwise look like a plain 200 and a 409 lose its
 * `Retry-After`, silently.
 */
export function warnHeadersLost(header: typeof IDEMPOTENT_REPLAYED_HEADER | 'Retry-After'): void {
  if (warnedAboutHeaders) return;
  warnedAboutHeaders = true;
  console.error(
    `[@once/idempotency] tRPC: ${header} was not sent (getResponseHeaders gave no Headers): put \`resHeaders: new Headers()\` in createContext and pass \`responseMeta: idempotencyResponseMeta\` to the standalone adapter (the fetch adapter passes resHeaders to createContext).`,
  );
}

/** How many guarded calls arrived in one HTTP request, per request (its headers, or its context). */
const guardedCallsPerRequest = new WeakMap<object, number>();

/** Counts a guarded call of the request; tRPC batches share one request, so one header set. */
export function countGuardedCall(request: object): void {
  guardedCallsPerRequest.set(request, (guardedCallsPerRequest.get(request) ?? 0) + 1);
}

/**
 * A refusal of a call that came in a batch says that the batch is the cause: every call of a
 * batch (tRPC's default `httpBatchLink`) shares the request's one `Idempotency-Key`.
 */
export function explainBatched(
  error: IdempotencyError,
  request: object,
  batchIndex: number | undefined,
): IdempotencyError {
  const calls = guardedCallsPerRequest.get(request) ?? 1;
  if (error.status >= 500 || (calls < 2 && !batchIndex)) return error;
  return new IdempotencyError(error.code, {
    message: `${error.message}: this call was batched with others into one HTTP request sharing one Idempotency-Key (tRPC httpBatchLink); send idempotent mutations over httpLink (splitLink)`,
    retryAfterSeconds: error.retryAfterSeconds,
    cause: error,
  });
}
