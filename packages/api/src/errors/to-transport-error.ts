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
 * What an error means to a client, whatever the transport: API and idempotency refusals as
 * they are; a database that is away (`isTransientDatabaseError`, as the worker retries on)
 * anywhere in the request is the fail-closed 503 `idempotency_store_unavailable`: nothing was
 * recorded, retry with the same key. Anything else is a bug (undefined), answered 500 bare.
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
 * Any error -> what tRPC answers ({@link refusalOf}), `Retry-After` set on `resHeaders` and
 * the refusal kept as `cause` for the formatter. Anything else, including the guard's own
 * refusals (already TRPCErrors with their headers), is returned as it is.
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
