import type { Idempotency } from '../../core/engine.ts';
import { IdempotencyError, isIdempotencyError } from '../../core/errors.ts';
import type { Execution } from '../../core/execution.ts';
import { computeFingerprint } from '../../core/fingerprint.ts';
import { IDEMPOTENCY_KEY_HEADER, parseIdempotencyKey } from '../../core/key.ts';
import type { OperationPolicy } from '../../core/types.ts';
import { fingerprintInputOf } from './fingerprint-input.ts';
import { problemDetailsResponse } from './problem-details.ts';
import { DEFAULT_REPLAY_HEADERS, replayedResponse, storedResponseFrom } from './stored-response.ts';

/**
 * Options of `withIdempotency`.
 *
 * @example
 * const options: WithIdempotencyOptions<Tx> = { idempotency, operation: 'payments.create', getTenantId: auth };
 */
export interface WithIdempotencyOptions<TTx> {
  idempotency: Idempotency<TTx>;
  /** Operation name (scope + fingerprint), fixed or derived from the request (e.g. method + route). */
  operation: string | ((request: Request) => string);
  /** Tenant from authentication (an account, a merchant), never from the body. */
  getTenantId: (request: Request) => string | Promise<string>;
  /** Who within the tenant spends the new-key allowance (an API key, a session). Default: the tenant. */
  getPrincipal?: (request: Request) => string | undefined;
  /** Refuse requests without a key. Default true. False runs them unguarded (Stripe's behaviour). */
  required?: boolean | ((request: Request) => boolean);
  /** What identifies "the same request". Default `defaultFingerprintInput`. */
  getFingerprintInput?: (request: Request) => unknown | Promise<unknown>;
  /** Render refusals. Default RFC 9457 problem+json (`problemDetailsResponse`). */
  renderError?: (error: IdempotencyError, request: Request) => Response | Promise<Response>;
  /** Response headers stored and replayed. Default content-type, location, content-language. */
  replayHeaders?: string[];
  policy?: OperationPolicy;
}

/**
 * Guard a web-standard `(Request) => Promise<Response>` handler (Next.js route handlers, Hono,
 * Bun, Deno, gateways). The first request runs the handler; retries with the same key get the
 * stored response plus `Idempotent-Replayed: true`; refusals render through `renderError`.
 * A 5xx response is returned but not stored (the key is released); anything else is stored.
 *
 * @example
 * export const POST = withIdempotency(
 *   async (request, exec) => {
 *     const body = await request.json();
 *     return db.transaction(async (tx) => {
 *       const payment = await createPayment(tx, body);
 *       const response = Response.json(payment, { status: 201 });
 *       await exec.complete(tx, await storedResponseFrom(response));
 *       return response;
 *     });
 *   },
 *   { idempotency, operation: 'payments.create', getTenantId: (request) => authenticate(request).tenantId },
 * );
 */
export function withIdempotency<TTx>(
  handler: (request: Request, exec: Execution<TTx>) => Promise<Response>,
  options: WithIdempotencyOptions<TTx>,
): (request: Request) => Promise<Response> {
  const render = options.renderError ?? problemDetailsResponse;
  const replayHeaders = options.replayHeaders ?? DEFAULT_REPLAY_HEADERS;
  // The default reads the body from ONE clone (a clone tees the body stream: not free).
  const getFingerprintInput =
    options.getFingerprintInput ??
    (async (copy: Request) => fingerprintInputOf(copy, await copy.text()));

  return async (request) => {
    const operation =
      typeof options.operation === 'function' ? options.operation(request) : options.operation;
    let key: string | undefined;
    try {
      key = parseIdempotencyKey(request.headers.get(IDEMPOTENCY_KEY_HEADER));
    } catch (error) {
      if (isIdempotencyError(error)) return render(error, request);
      throw error;
    }
    const tenantId = await options.getTenantId(request);
    if (key === undefined) {
      const required =
        typeof options.required === 'function'
          ? options.required(request)
          : (options.required ?? true);
      if (required) return render(new IdempotencyError('idempotency_key_missing'), request);
      return handler(request, options.idempotency.passthrough({ tenantId, operation }));
    }

    const fingerprint = computeFingerprint(operation, await getFingerprintInput(request.clone()));
    let executed: Response | undefined;
    try {
      const outcome = await options.idempotency.execute(
        {
          tenantId,
          operation,
          key,
          fingerprint,
          policy: options.policy,
          principal: options.getPrincipal?.(request),
        },
        async (exec) => {
          executed = await handler(request, exec);
          return storedResponseFrom(executed, replayHeaders);
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
