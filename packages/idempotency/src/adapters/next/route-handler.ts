import type { FetchExecution } from '../fetch/fetch-idempotency.ts';
import { guardEachRequest, type WithIdempotencyOptions } from '../fetch/with-idempotency.ts';

/**
 * The second argument Next.js passes an app-router route handler (`{ params }`, a promise
 * since Next.js 15). Any context type works; this is the default.
 */
export interface NextRouteContext {
  params: Promise<Record<string, string | string[] | undefined>>;
}

/**
 * Guards an app-router route handler (`export const POST = ...` in `route.ts`) with the
 * web-standard fetch wrapper, typed for Next.js's `(request, context)` signature: the handler
 * also gets the route's context (`params`). Same semantics as `withIdempotency`: the
 * `Idempotency-Key` header, replays with `Idempotent-Replayed: true`, RFC 9457 problem
 * details for refusals (409, 422, 400, 503). `NextRequest` is a `Request`, so it fits.
 *
 * @example
 * // app/api/orders/[shop]/route.ts
 * export const POST = idempotentRouteHandler(
 *   async (request, exec, { params }) => Response.json({ shop: (await params).shop }, { status: 201 }),
 *   { idempotency, operation: 'orders.place', getTenantId: (request) => tenantFromSession(request) },
 * );
 */
export function idempotentRouteHandler<TTx, TContext = NextRouteContext>(
  handler: (request: Request, exec: FetchExecution<TTx>, context: TContext) => Promise<Response>,
  options: WithIdempotencyOptions<TTx>,
): (request: Request, context: TContext) => Promise<Response> {
  const guard = guardEachRequest(options);
  return (request, context) => guard(request, (exec) => handler(request, exec, context));
}
