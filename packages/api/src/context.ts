import type { ApiDependencies } from './dependencies.ts';

/**
 * The context of one tRPC request. Authentication is NOT done here (public procedures must
 * not pay for a DB lookup); the `authed` procedure resolves the tenant from `headers`.
 */
export interface Context extends ApiDependencies {
  /** The request's headers: Authorization, Cookie, Idempotency-Key. */
  headers: Headers;
  /** Headers of the response: Set-Cookie, Retry-After, Idempotent-Replayed. */
  resHeaders: Headers;
  /** Whether the request came over https (cookies get `Secure`). */
  secure: boolean;
}

/**
 * Creates the context from the fetch adapter's `{ req, resHeaders }` plus the process's
 * dependencies. One context per HTTP request, so send idempotent mutations unbatched.
 */
export function createContext(
  options: { req: Request; resHeaders: Headers } & ApiDependencies,
): Context {
  const { req, resHeaders, ...deps } = options;
  const forwardedProto = req.headers.get('x-forwarded-proto');
  const secure = (forwardedProto ?? new URL(req.url).protocol.replace(':', '')) === 'https';
  return { ...deps, headers: req.headers, resHeaders, secure };
}
