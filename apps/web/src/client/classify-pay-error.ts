import type { AttemptOutcome } from '@once/idempotency/react';
import { TRPCClientError } from '@trpc/client';
import { parseRetryAfter, type RecordedHeaders } from './response-header-recorder.ts';

/** The error `data` the API's error formatter sends (see packages/api/src/trpc.ts). */
interface OnceErrorData {
  code?: string;
  httpStatus?: number;
  idempotency?: { code?: string; retryAfterSeconds?: number | null } | null;
}

/** Conflict answers without a Retry-After still wait a moment before asking again. */
const DEFAULT_CONFLICT_WAIT_SECONDS = 1;

/**
 * Turns a failed `checkout.pay` call into what the checkout does next. No `data` and no
 * response means nothing came back (refused, reset, lost): the request may or may not have
 * run, which is exactly what the idempotency key makes safe to retry.
 *
 * @example
 * try { ... } catch (error) { return classifyPayError(error, recorder.take(attemptId)); }
 */
export function classifyPayError(
  error: unknown,
  recorded: RecordedHeaders | undefined,
): AttemptOutcome<never> {
  if (!(error instanceof TRPCClientError)) {
    return { kind: 'network', detail: error instanceof Error ? error.message : String(error) };
  }
  const data = (error.data ?? undefined) as OnceErrorData | undefined;
  const response = (error.meta as { response?: Response } | undefined)?.response;
  const status = data?.httpStatus ?? recorded?.status ?? response?.status;
  const retryAfter =
    data?.idempotency?.retryAfterSeconds ??
    recorded?.retryAfterSeconds ??
    parseRetryAfter(response?.headers.get('retry-after') ?? null);

  if (!data) {
    // No tRPC error body: either no response at all, or something in between (a proxy's
    // 502 page, a server dying mid-response).
    if (status === undefined) return { kind: 'network', detail: error.message };
    // A success status whose body could not be read (cut mid-answer): the request ran, so
    // this is a lost answer, never a refusal; retrying with the key yields the stored one.
    if (status < 300) return { kind: 'network', detail: error.message };
    if (status >= 500) return { kind: 'server_error', status, detail: error.message };
    return { kind: 'rejected', code: `http_${status}`, message: error.message };
  }

  switch (data.idempotency?.code ?? data.code) {
    case 'idempotency_key_in_use':
      return { kind: 'in_use', retryAfterSeconds: retryAfter ?? DEFAULT_CONFLICT_WAIT_SECONDS };
    case 'idempotency_outcome_unknown':
      return {
        kind: 'outcome_unknown',
        retryAfterSeconds: retryAfter ?? DEFAULT_CONFLICT_WAIT_SECONDS,
      };
    case 'idempotency_key_reused':
      return { kind: 'key_reused' };
    case 'idempotency_store_unavailable':
      return { kind: 'store_unavailable', retryAfterSeconds: retryAfter };
    case 'idempotency_rate_limited':
      return { kind: 'rate_limited', retryAfterSeconds: retryAfter };
    case 'idempotency_lease_lost':
      // Another attempt of the same key took over; asking again yields a conflict or the replay.
      return { kind: 'server_error', status: status ?? 409, detail: error.message };
  }
  if (status === 401) return { kind: 'unauthenticated' };
  if (status === 429) return { kind: 'rate_limited', retryAfterSeconds: retryAfter };
  if (status !== undefined && status >= 500) {
    return { kind: 'server_error', status, detail: error.message };
  }
  return { kind: 'rejected', code: data.code ?? 'rejected', message: error.message };
}
