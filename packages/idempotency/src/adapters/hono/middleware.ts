import type { Context, Env, MiddlewareHandler } from 'hono';
import type { Idempotency } from '../../core/engine.ts';
import type { OperationPolicy } from '../../core/types.ts';
import {
  type FetchExecution,
  type FetchIdempotencyOptions,
  requestGuard,
} from '../fetch/fetch-idempotency.ts';
import { defaultFingerprintInput } from '../fetch/fingerprint-input.ts';

/**
 * Options of `idempotencyMiddleware`: the fetch adapter's (`required`, `renderError`,
 * `replayHeaders`) plus where a route finds its tenant, operation and fingerprint.
 */
export interface IdempotencyMiddlewareOptions<TTx, E extends Env = Env>
  extends FetchIdempotencyOptions {
  idempotency: Idempotency<TTx>;
  /** Operation name (scope + fingerprint), fixed or derived from the context (e.g. the route). */
  operation: string | ((c: Context<E>) => string);
  /** Tenant from authentication (an earlier middleware), never from the body. */
  getTenantId: (c: Context<E>) => string | Promise<string>;
  /** Who within the tenant spends the new-key allowance. Default: the tenant. */
  getPrincipal?: (c: Context<E>) => string | undefined;
  /**
   * What identifies "the same request"; asked only when the request has a valid key. Default
   * `defaultFingerprintInput(c.req.raw)` (method, path, query, body read from a clone).
   * `(c) => c.req.json()` works too: Hono keeps the parsed body for the handler.
   */
  getFingerprintInput?: (c: Context<E>) => unknown | Promise<unknown>;
  policy?: OperationPolicy;
}

/** What the middleware puts on the context: `c.get('idempotency')`. */
export interface IdempotencyVariables<TTx> {
  idempotency: FetchExecution<TTx>;
}

/**
 * The middleware's Env: what the route may `c.get`. Under an `any` Env (not annotated) only
 * `idempotency`, so Hono merges it with the app's own variables instead of dropping both.
 */
type WithIdempotency<E extends Env, TTx> = 0 extends 1 & E
  ? { Variables: IdempotencyVariables<TTx> }
  : E & { Variables: IdempotencyVariables<TTx> };

/**
 * Guard Hono routes with `Idempotency-Key`: the first request runs the route (which reads
 * `c.get('idempotency')` to store its response inside its transaction); retries get the stored
 * response with `Idempotent-Replayed: true`; refusals are problem+json (or `renderError`).
 * Imports nothing from Hono at run time (types only).
 *
 * @example
 * app.post(
 *   '/payments',
 *   idempotencyMiddleware({ idempotency, operation: 'payments.create', getTenantId: (c) => c.get('tenantId') }),
 *   async (c) => {
 *     const exec = c.get('idempotency');
 *     return db.transaction(async (tx) => {
 *       const response = c.json(await createPayment(tx, await c.req.json()), 201);
 *       await exec.complete(tx, response);
 *       return response;
 *     });
 *   },
 * );
 */
// `E` defaults to `any`, not Hono's `Env`: a generic call cannot infer the app's `Env` from the
// route it is passed to, and under `Env` (no variables) `c.get('tenantId')` in an unannotated
// `getTenantId` is TS2769. Annotate `(c: Context<AppEnv>)` to have `c` typed; either way the
// route sees its own variables plus `idempotency`.
// biome-ignore lint/suspicious/noExplicitAny: the one way to let Hono's app supply the Env
export function idempotencyMiddleware<TTx, E extends Env = any>(
  options: IdempotencyMiddlewareOptions<TTx, E>,
): MiddlewareHandler<WithIdempotency<E, TTx>> {
  const guard = requestGuard(options.idempotency, options);
  return async (c, next) => {
    const context = c as unknown as Context<E>;
    const operation =
      typeof options.operation === 'function' ? options.operation(context) : options.operation;
    const response = await guard(
      c.req.raw,
      {
        tenantId: await options.getTenantId(context),
        operation,
        principal: options.getPrincipal?.(context),
        policy: options.policy,
      },
      async (exec) => {
        c.set('idempotency', exec);
        await next();
        // Hono turns an error thrown by the route into `c.res` (its `onError` answer) and keeps the
        // error in `c.error`: the engine must see it (a lost COMMIT is outcome unknown, a key
        // conflict a replay), as it sees every other adapter's handler throw.
        if (c.error) throw c.error;
        return c.res;
      },
      () =>
        options.getFingerprintInput
          ? options.getFingerprintInput(context)
          : defaultFingerprintInput(c.req.raw),
    );
    // After the route ran, Hono keeps `c.res` (its body now read into the store) over what a
    // middleware returns: hand it the response the guard sends in its place.
    c.res = response;
    return response;
  };
}
