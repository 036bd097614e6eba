import { type IdempotencyAnswer, keyRefusalOf, tellAnswered } from '../../core/answered.ts';
import { type CompletingWith, completingWith } from '../../core/completing-with.ts';
import type { Idempotency } from '../../core/engine.ts';
import { IdempotencyError, isIdempotencyError } from '../../core/errors.ts';
import type { Execution } from '../../core/execution.ts';
import { computeFingerprint } from '../../core/fingerprint.ts';
import { IDEMPOTENCY_KEY_HEADER, parseIdempotencyKey } from '../../core/key.ts';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../../core/response-size.ts';
import type { OperationPolicy, StoredResponse } from '../../core/types.ts';
import { defaultFingerprintInput } from './fingerprint-input.ts';
import { problemDetailsResponse } from './problem-details.ts';
import {
  DEFAULT_REPLAY_HEADERS,
  replayedResponse,
  resendable,
  storedResponseTaker,
  UnstorableBody,
} from './stored-response.ts';

/**
 * How a service speaks HTTP about keys, fixed once per service: whether a key is required,
 * how refusals look, which response headers are stored and replayed.
 */
export interface FetchIdempotencyOptions {
  /** Refuse requests without a key. Default true. False runs them unguarded (Stripe's behaviour). */
  required?: boolean | ((request: Request) => boolean);
  /** Render refusals. Default RFC 9457 problem+json (`problemDetailsResponse`). */
  renderError?: (error: IdempotencyError, request: Request) => Response | Promise<Response>;
  /** Response headers stored and replayed. Default content-type, location, content-language. */
  replayHeaders?: readonly string[];
  /**
   * Most body bytes the guard reads from a handler's `Response` to store it. Default 256 KiB;
   * set it to the engine's `maxResponseBytes` when that is changed. Reading stops one chunk past
   * it: the response is not stored (see `handle`), so a stream without an end is never
   * buffered forever. A `text/event-stream` response is refused without being read.
   */
  maxResponseBytes?: number;
  /**
   * Told how each guarded request with a key was answered (executed, replayed from the key,
   * or refused by it: 409, 422) and what the key holds (a refusal: its status, no body), e.g.
   * to record a replay or a refusal where the handler cannot see it. Runs once the answer is
   * decided, before it is sent; what it throws is logged and dropped.
   */
  onAnswered?: (answer: FetchAnswer, request: Request) => unknown;
}

/**
 * What `onAnswered` hears: the answer, and the response the key holds (status, replayed
 * headers, body text) as it is sent or replayed.
 */
export interface FetchAnswer extends IdempotencyAnswer {
  response: StoredResponse;
}

/** What one request is, as its route knows it after authentication and parsing. */
export interface IdempotentRequest {
  /** Tenant from authentication (an account, a merchant), never from the body. */
  tenantId: string;
  /** Operation name: scope of the key and part of the fingerprint. */
  operation: string;
  /**
   * What identifies "the same request" (JSON-canonicalised). Pass it when the route has read
   * the body already; when absent, `defaultFingerprintInput(request)` reads a clone of it.
   */
  fingerprintInput?: unknown;
  /** Who within the tenant spends the new-key allowance (an API key, a session). Default: the tenant. */
  principal?: string;
  policy?: OperationPolicy;
}

/**
 * The execution a fetch handler gets: an `Execution` whose `complete` also takes the
 * `Response` itself, stored with the replayed headers only. `complete` reads that response's
 * body (no clone): return it from the handler as it is, and the guard sends the same status,
 * headers and body; do not read its body yourself after `complete`.
 *
 * Given a `StoredResponse` instead (status, replayed headers, body text), `complete` stores it
 * as it is and the guard sends whatever `Response` the handler returns without reading it.
 */
export type FetchExecution<TTx> = CompletingWith<TTx, Response | StoredResponse>;

/** The engine bound to web-standard `Request` / `Response`. See `fetchIdempotency`. */
export interface FetchIdempotency<TTx> {
  /**
   * Guard one request: the first with a key runs `run`; retries get the stored response with
   * `Idempotent-Replayed: true`; refusals render through `renderError`. A 5xx from `run` is
   * returned but not stored (the key is released); anything else is stored.
   *
   * Streams are not stored: a returned `text/event-stream` response (cancelled unread) or a
   * body over `maxResponseBytes` (read no further than that) answers 500
   * `idempotency_result_unstorable`, and since the handler ran, the key is kept `unknown`
   * (retries get 409 `idempotency_outcome_unknown`), never released. Given such a response,
   * `complete` throws `idempotency_response_too_large` before anything is written. Stream
   * outside the guard, or store a small result and stream it from a route of its own.
   */
  handle(
    request: Request,
    scope: IdempotentRequest,
    run: (exec: FetchExecution<TTx>) => Promise<Response>,
  ): Promise<Response>;
}

/**
 * Bind the engine to web-standard `Request` / `Response`, once per service. Each route then
 * calls `handle` with what it knows of the request (tenant, operation, the parsed input as
 * the fingerprint): nothing is built per request, and a route that has read the body already
 * passes `fingerprintInput` instead of handing over a body it cannot clone any more.
 *
 * @example
 * const http = fetchIdempotency(idempotency);
 * export async function POST(request: Request) {
 *   const tenant = await authenticate(request);
 *   const input = parse(await request.json());
 *   return http.handle(
 *     request,
 *     { tenantId: tenant.id, operation: 'payments.create', fingerprintInput: input },
 *     (exec) =>
 *       db.transaction(async (tx) => {
 *         const response = Response.json(await createPayment(tx, input), { status: 201 });
 *         await exec.complete(tx, response);
 *         return response;
 *       }),
 *   );
 * }
 */
export function fetchIdempotency<TTx>(
  idempotency: Idempotency<TTx>,
  options: FetchIdempotencyOptions = {},
): FetchIdempotency<TTx> {
  const guard = requestGuard(idempotency, options);
  return { handle: (request, scope, run) => guard(request, scope, run, defaultFingerprintInput) };
}

/**
 * `handle`: the fingerprint input is `scope.fingerprintInput`, else `readInput(request)`, asked
 * for only once the request has a valid key (`withIdempotency`'s `getFingerprintInput` may read
 * the body). Internal.
 */
export function requestGuard<TTx>(idempotency: Idempotency<TTx>, options: FetchIdempotencyOptions) {
  const render = options.renderError ?? problemDetailsResponse;
  const replayHeaders = options.replayHeaders ?? DEFAULT_REPLAY_HEADERS;
  const take = storedResponseTaker(
    replayHeaders,
    options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
  );
  /**
   * Snapshot a `Response`, its unstorable body turned into `unstorable(reason)`: inside
   * `complete` (nothing written yet) a refusal, after the handler returned an unknown outcome.
   */
  const snapshot = async (
    response: Response,
    unstorable: (body: UnstorableBody) => IdempotencyError,
  ): Promise<StoredResponse> => {
    try {
      return await take(response);
    } catch (error) {
      throw error instanceof UnstorableBody ? unstorable(error) : error;
    }
  };
  /**
   * `exec` for the route; `completed` remembers what was stored and, when `complete` was given
   * a `Response`, that response (its body now read).
   */
  const fetchExecution = (exec: Execution<TTx>, completed: Completed): FetchExecution<TTx> =>
    completingWith(exec, (tx: TTx, response: Response | StoredResponse) => {
      if (isResponse(response)) return completeWithRead(exec, completed, tx, response);
      completed.read = undefined;
      completed.stored = response;
      return exec.complete(tx, response);
    });
  const completeWithRead = async (
    exec: Execution<TTx>,
    completed: Completed,
    tx: TTx,
    response: Response,
  ) => {
    const stored = await snapshot(response, refusedInComplete);
    // Remembered before completing: a body read stays read even if the store refuses it.
    completed.read = response;
    completed.stored = stored;
    await exec.complete(tx, stored);
  };

  return async function guard(
    request: Request,
    scope: IdempotentRequest,
    run: (exec: FetchExecution<TTx>) => Promise<Response>,
    readInput: (request: Request) => unknown,
  ): Promise<Response> {
    const { tenantId, operation } = scope;
    let key: string | undefined;
    try {
      key = parseIdempotencyKey(request.headers.get(IDEMPOTENCY_KEY_HEADER));
    } catch (error) {
      if (isIdempotencyError(error)) return render(error, request);
      throw error;
    }
    if (key === undefined) {
      const required =
        typeof options.required === 'function'
          ? options.required(request)
          : (options.required ?? true);
      if (required) return render(new IdempotencyError('idempotency_key_missing'), request);
      // Nothing is stored without a key: `complete` must not read the handler's response.
      return run(completingWith(idempotency.passthrough({ tenantId, operation }), storeNothing));
    }
    let executed: Response | undefined;
    let fingerprint: string | undefined;
    try {
      const input =
        scope.fingerprintInput !== undefined ? scope.fingerprintInput : readInput(request);
      // Inside the try: input that cannot be fingerprinted is a 400, never a thrown error.
      fingerprint = computeFingerprint(operation, await input);
      const outcome = await idempotency.execute(
        { tenantId, operation, key, fingerprint, policy: scope.policy, principal: scope.principal },
        async (exec) => {
          const completed: Completed = {};
          const returned = await run(fetchExecution(exec, completed));
          if (completed.stored) {
            // Replays get what `complete` stored. The returned response goes out as the handler
            // built it, rebuilt only when `complete` read its body.
            executed =
              completed.read === returned ? resendable(returned, completed.stored) : returned;
            return completed.stored;
          }
          // Not completed: the guard owns the returned response now; read it once and send its
          // text again, instead of teeing the body into a clone.
          const stored = await snapshot(
            returned,
            (cause) => new IdempotencyError('idempotency_result_unstorable', { cause }),
          );
          executed = resendable(returned, stored);
          return stored;
        },
      );
      const answer = outcome.kind === 'executed' && executed ? executed : undefined;
      if (options.onAnswered)
        await tellAnswered(
          options.onAnswered,
          {
            outcome: answer ? 'executed' : 'replayed',
            tenantId,
            operation,
            key,
            fingerprint,
            response: outcome.response,
          },
          request,
        );
      return answer ?? replayedResponse(outcome.response);
    } catch (error) {
      if (!isIdempotencyError(error)) throw error;
      const refusal = keyRefusalOf(error);
      if (refusal && fingerprint !== undefined && options.onAnswered) {
        // The refusal as it is sent: its status, no stored body.
        const response = { status: error.status, headers: {}, body: null };
        await tellAnswered(
          options.onAnswered,
          { outcome: 'refused', tenantId, operation, key, fingerprint, refusal, response },
          request,
        );
      }
      return render(error, request);
    }
  };
}

/** What the handler completed with (see `fetchExecution`). */
interface Completed {
  /** What `complete` stored. */
  stored?: StoredResponse;
  /** The `Response` whose body `complete` read to store it, if it was given one. */
  read?: Response;
}

/** `complete` given a stream: refused before anything is written, as an oversized response is. */
const refusedInComplete = (body: UnstorableBody): IdempotencyError =>
  new IdempotencyError('idempotency_response_too_large', { message: body.message, cause: body });

/** The unguarded run's `complete`: nothing to store, and the response's body stays unread. */
const storeNothing = (): Promise<void> => Promise.resolve();

/** A `Response` (also from another realm or polyfill), as opposed to a plain `StoredResponse`. */
function isResponse(value: Response | StoredResponse): value is Response {
  return (
    (typeof Response !== 'undefined' && value instanceof Response) ||
    typeof (value as { clone?: unknown }).clone === 'function'
  );
}
