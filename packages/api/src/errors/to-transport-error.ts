import { TRPCError } from '@trpc/server';
import { API_PROBLEM_TYPE_BASE, type ApiError, isApiError } from './api-error.ts';

/**
 * ApiError -> TRPCError. The ApiError stays the `cause`, so the error formatter can
 * expose its stable `code` and `details`.
 */
export function apiErrorToTRPC(error: unknown): unknown {
  if (!isApiError(error)) return error;
  return new TRPCError({ code: error.trpcCode, message: error.message, cause: error });
}

/**
 * ApiError -> RFC 9457 `application/problem+json` response for the REST routes.
 *
 * @example
 * catch (e) { if (isApiError(e)) return apiProblemResponse(e); throw e; }
 */
export function apiProblemResponse(error: ApiError): Response {
  return new Response(
    JSON.stringify({
      type: `${API_PROBLEM_TYPE_BASE}${error.code}`,
      title: error.message,
      status: error.status,
      code: error.code,
      ...(error.details ? { details: error.details } : {}),
    }),
    { status: error.status, headers: { 'content-type': 'application/problem+json' } },
  );
}
