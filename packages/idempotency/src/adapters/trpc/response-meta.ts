import { IdempotencyError } from '../../core/errors.ts';
import type { IDEMPOTENT_REPLAYED_HEADER } from '../../core/key.ts';

/**
 * The `responseMeta` of tRPC's standalone (Node) adapter: sends `ctx.resHeaders`, where the
 * plugin writes `Idempotent-Replayed` and `Retry-After`. The fetch adapter sends its
 * `resHeaders` by itself; the standalone adapter has none, so the context makes one.
 */
export function idempotencyResponseMeta(opts: { ctx?: { resHeaders?: Headers } | undefined }): {
  headers?: Headers;
} {
  const headers = opts.ctx?.resHeaders;
  if (headers) sentHeaders.add(headers);
  return headers ? { headers } : {};
}

/** Response header sets an adapter has read out (so sent): see `expectSent`. */
const sentHeaders = new WeakSet<Headers>();
const watchedHeaders = new WeakSet<Headers>();
let warnedAboutHeaders = false;
let warnedAboutUnsentHeaders = false;

/**
 * After the plugin wrote `header` into the context's `resHeaders`, says once per process if
 * no adapter sent them. tRPC's fetch adapter and `idempotencyResponseMeta` both hand the set to
 * tRPC, which reads it with `entries()` when it builds the response; the standalone adapter
 * without `responseMeta` never reads it, and a replay went out as a bare 200. The set is looked
 * at once the response is built: a second after the first call of a request (tRPC gives every
 * call an index, so a call alone and the first of a batch look the same; a batch waits for its
 * slowest call), ten after a later call of a batch.
 */
export function expectSent(
  headers: Headers,
  header: typeof IDEMPOTENT_REPLAYED_HEADER | 'Retry-After',
  batchIndex: number | undefined,
): void {
  if (warnedAboutUnsentHeaders || sentHeaders.has(headers)) return;
  if (!watchedHeaders.has(headers)) {
    watchedHeaders.add(headers);
    // An own property of this one object: nothing else is changed.
    Object.defineProperty(headers, 'entries', {
      configurable: true,
      value: function entries(this: Headers) {
        sentHeaders.add(headers);
        return Headers.prototype.entries.call(this);
      },
    });
  }
  const check = () => {
    if (sentHeaders.has(headers) || warnedAboutUnsentHeaders) return;
    warnedAboutUnsentHeaders = true;
    console.error(
      `[@once/idempotency] tRPC: ${header} was not sent (it is in ctx.resHeaders, which no adapter read): pass \`responseMeta: idempotencyResponseMeta\` to the standalone adapter (the fetch adapter sends resHeaders by itself).`,
    );
  };
  setTimeout(check, batchIndex ? 10_000 : 1_000).unref?.();
}

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
