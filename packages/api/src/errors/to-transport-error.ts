import {
  IdempotencyError,
  isIdempotencyError,
  STORE_UNAVAILABLE_RETRY_AFTER_SECONDS,
} from '@once/idempotency';
import { problemDetailsResponse } from '@once/idempotency/fetch';
import { isTransientDatabaseError } from '@once/postgres';
import { TRPCError } from '@trpc/server';
import { API_PROBLEM_TYPE_BASE, type ApiError, isApiError } from './api-error.ts';

/**
 * What an error means to a client, whatever the transport: an API refusal or an idempotency
 * refusal as it is; a database that is away (stopped, restarting, our connection terminated:
 * `isTransientDatabaseError` of `@once/postgres`, the one classifier the worker retries on too)
 * anywhere in the request, tenant lookup, authentication or the key store, is the key store's
 * fail-closed 503 `idempotency_store_unavailable`: nothing was recorded, retry with the same key.
 * Anything else is no refusal (undefined): a bug, answered 500 without its text.
 */
export function refusalOf(error: unknown): ApiError | IdempotencyError | undefined {
  if (isApiError(error) || isIdempotencyError(error)) return error;
  if (isTransientDatabaseError(error)) {
    return new IdempotencyError('idempotency_store_unavailable', {
      // The guard's own: whichever statement met the outage first, the client hears the same.
      retryAfterSeconds: STORE_UNAVAILABLE_RETRY_AFTER_SECONDS,
      cause: error,
    });
  }
  return undefined;
}

/**
 * ApiError -> TRPCError. The ApiError stays the `cause`, so the error formatter can
 * expose its stable `code` and `details`.
 */
export function apiErrorToTRPC(error: unknown): unknown {
  if (!isApiError(error)) return error;
  return new TRPCError({ code: error.trpcCode, message: error.message, cause: error });
}

/**
 * Any error -> what tRPC answers ({@link refusalOf}): an ApiError its catalogue code; a
 * database that is away SERVICE_UNAVAILABLE with `Retry-After` on `resHeaders` and the
 * idempotency refusal as `cause` (so the formatter's `data.code` and `data.idempotency` carry
 * `idempotency_store_unavailable`). Anything else, including the guard's own refusals (its
 * plugin already made them TRPCErrors and set their headers), is returned as it is.
 */
export function toTRPCError(error: unknown, resHeaders?: Headers): unknown {
  const cause = error instanceof TRPCError ? error.cause : error;
  const refusal = refusalOf(cause);
  if (isApiError(refusal)) return apiErrorToTRPC(refusal);
  if (refusal?.code !== 'idempotency_store_unavailable' || refusal === cause) return error;
  resHeaders?.set('retry-after', String(refusal.retryAfterSeconds));
  return new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: refusal.message, cause: refusal });
}

/** ApiError -> RFC 9457 `application/problem+json` response for the REST routes. */
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

/**
 * Any error -> its problem+json response for the REST routes ({@link refusalOf}; an
 * idempotency refusal with `Retry-After`), or undefined for a bug (the route answers 500).
 */
export function toProblemResponse(error: unknown): Response | undefined {
  const refusal = refusalOf(error);
  if (!refusal) return undefined;
  return isApiError(refusal) ? apiProblemResponse(refusal) : problemDetailsResponse(refusal);
}
