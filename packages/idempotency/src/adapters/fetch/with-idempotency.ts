import type { Idempotency } from '../../core/engine.ts';
import type { OperationPolicy } from '../../core/types.ts';
import {
  type FetchExecution,
  type FetchIdempotencyOptions,
  requestGuard,
} from './fetch-idempotency.ts';
import { defaultFingerprintInput } from './fingerprint-input.ts';

/**
 * Options of `withIdempotency`: the fetch adapter's (`required`, `renderError`, `replayHeaders`,
 * ...) plus where a request's tenant, operation and fingerprint come from.
 */
export interface WithIdempotencyOptions<TTx> extends FetchIdempotencyOptions {
  idempotency: Idempotency<TTx>;
  /** Operation name (scope + fingerprint), fixed or derived from the request (e.g. method + route). */
  operation: string | ((request: Request) => string);
  /** Tenant from authentication (an account, a merchant), never from the body. */
  getTenantId: (request: Request) => string | Promise<string>;
  /** Who within the tenant spends the new-key allowance (an API key, a session). Default: the tenant. */
  getPrincipal?: (request: Request) => string | undefined;
  /** What identifies "the same request". Default `defaultFingerprintInput`. */
  getFingerprintInput?: (request: Request) => unknown | Promise<unknown>;
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
 *       await exec.complete(tx, response); // stored with the replayed headers; the guard sends it
 *       return response;
 *     });
 *   },
 *   { idempotency, operation: 'payments.create', getTenantId: (request) => authenticate(request).tenantId },
 * );
 */
export function withIdempotency<TTx>(
  handler: (request: Request, exec: FetchExecution<TTx>) => Promise<Response>,
  options: WithIdempotencyOptions<TTx>,
): (request: Request) => Promise<Response> {
  const guard = guardEachRequest(options);
  return (request) => guard(request, (exec) => handler(request, exec));
}

/**
 * `withIdempotency` with the handler given per request, so an adapter can hand it more than
 * `(request, exec)` (Next's route context) without stashing it anywhere. Internal.
 */
export function guardEachRequest<TTx>(
  options: WithIdempotencyOptions<TTx>,
): (request: Request, run: (exec: FetchExecution<TTx>) => Promise<Response>) => Promise<Response> {
  const guard = requestGuard(options.idempotency, options);
  const readInput = (request: Request) =>
    options.getFingerprintInput
      ? options.getFingerprintInput(request.clone())
      : defaultFingerprintInput(request);
  return async (request, run) => {
    const operation =
      typeof options.operation === 'function' ? options.operation(request) : options.operation;
    return guard(
      request,
      {
        tenantId: await options.getTenantId(request),
        operation,
        principal: options.getPrincipal?.(request),
        policy: options.policy,
      },
      run,
      readInput,
    );
  };
}
