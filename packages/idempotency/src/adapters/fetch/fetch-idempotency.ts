import { type CompletingWith, completingWith } from '../../core/completing-with.ts';
import type { Idempotency } from '../../core/engine.ts';
import { IdempotencyError, isIdempotencyError } from '../../core/errors.ts';
import type { Execution } from '../../core/execution.ts';
import { computeFingerprint } from '../../core/fingerprint.ts';
import { IDEMPOTENCY_KEY_HEADER, parseIdempotencyKey } from '../../core/key.ts';
import type { OperationPolicy, StoredResponse } from '../../core/types.ts';
import { defaultFingerprintInput } from './fingerprint-input.ts';
import { problemDetailsResponse } from './problem-details.ts';
import {
  DEFAULT_REPLAY_HEADERS,
  replayedResponse,
  storedResponseReader,
} from './stored-response.ts';

/**
 * How a service speaks HTTP about keys, fixed once per service: whether a key is required,
 * how refusals look, which response headers are stored and replayed.
 *
 * @example
 * const options: FetchIdempotencyOptions = { required: false, replayHeaders: ['content-type'] };
 */
export interface FetchIdempotencyOptions {
  /** Refuse requests without a key. Default true. False runs them unguarded (Stripe's behaviour). */
  required?: boolean | ((request: Request) => boolean);
  /** Render refusals. Default RFC 9457 problem+json (`problemDetailsResponse`). */
  renderError?: (error: IdempotencyError, request: Request) => Response | Promise<Response>;
  /** Response headers stored and replayed. Default content-type, location, content-language. */
  replayHeaders?: readonly string[];
}

/**
 * What one request is, as its route knows it after authentication and parsing.
 *
 * @example
 * const scope: IdempotentRequest = { tenantId: account.id, operation: 'payments.create', fingerprintInput: params };
 */
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
 * `Response` itself (stored with the replayed headers only; read from a clone, so the
 * original stays sendable).
 *
 * @example
 * const response = Response.json(payment, { status: 201 });
 * await exec.complete(tx, response);
 * return response;
 */
export type FetchExecution<TTx> = CompletingWith<TTx, Response | StoredResponse>;

/**
 * The engine bound to web-standard `Request` / `Response`. See `fetchIdempotency`.
 *
 * @example
 * const response = await http.handle(request, { tenantId, operation: 'payments.create' }, run);
 */
export interface FetchIdempotency<TTx> {
  /**
   * Guard one request: the first with a key runs `run`; retries get the stored response with
   * `Idempotent-Replayed: true`; refusals render through `renderError`. A 5xx from `run` is
   * returned but not stored (the key is released); anything else is stored.
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
  return {
    handle: (request, scope, run) =>
      guard(request, scope, run, () =>
        scope.fingerprintInput !== undefined
          ? scope.fingerprintInput
          : defaultFingerprintInput(request),
      ),
  };
}

/**
 * `handle`, with the fingerprint input asked for only once the request has a valid key (the
 * shape `withIdempotency` needs: its `getFingerprintInput` may read the body). Internal.
 */
export function requestGuard<TTx>(idempotency: Idempotency<TTx>, options: FetchIdempotencyOptions) {
  const render = options.renderError ?? problemDetailsResponse;
  const replayHeaders = options.replayHeaders ?? DEFAULT_REPLAY_HEADERS;
  const snapshot = storedResponseReader(replayHeaders);
  /**
   * `exec` for the route; `completed` remembers the Response it completed with and its stored
   * snapshot, so the guard does not clone and read the same body a second time afterwards.
   */
  const fetchExecution = (
    exec: Execution<TTx>,
    completed: { response?: Response; stored?: StoredResponse } = {},
  ): FetchExecution<TTx> =>
    completingWith(exec, async (tx: TTx, response: Response | StoredResponse) => {
      if (!isResponse(response)) return exec.complete(tx, response);
      const stored = await snapshot(response);
      await exec.complete(tx, stored);
      completed.response = response;
      completed.stored = stored;
    });

  return async function guard(
    request: Request,
    scope: Omit<IdempotentRequest, 'fingerprintInput'>,
    run: (exec: FetchExecution<TTx>) => Promise<Response>,
    fingerprintInput: () => unknown,
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
      return run(fetchExecution(idempotency.passthrough({ tenantId, operation })));
    }
    const fingerprint = computeFingerprint(operation, await fingerprintInput());
    let executed: Response | undefined;
    try {
      const outcome = await idempotency.execute(
        { tenantId, operation, key, fingerprint, policy: scope.policy, principal: scope.principal },
        async (exec) => {
          const completed: { response?: Response; stored?: StoredResponse } = {};
          executed = await run(fetchExecution(exec, completed));
          return completed.response === executed && completed.stored
            ? completed.stored
            : snapshot(executed);
        },
      );
      if (outcome.kind === 'executed' && executed) return executed;
      return replayedResponse(outcome.response);
    } catch (error) {
      if (isIdempotencyError(error)) return render(error, request);
      throw error;
    }
  };
}

/** A `Response` (also from another realm or polyfill), as opposed to a plain `StoredResponse`. */
function isResponse(value: Response | StoredResponse): value is Response {
  return (
    (typeof Response !== 'undefined' && value instanceof Response) ||
    typeof (value as { clone?: unknown }).clone === 'function'
  );
}
