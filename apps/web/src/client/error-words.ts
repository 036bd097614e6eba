import { TRPCClientError } from '@trpc/client';

/**
 * What a page says when a call other than the payment itself fails (the session, the
 * catalogue, signing in): worded here from the error's stable code or status, never its text,
 * which may be the server's SQL ("Failed query: select ... from "tenants" ...") or the
 * browser's ("Failed to fetch", "Unexpected end of JSON input"). The payment's own outcomes
 * are worded by `classify-pay-error.ts`.
 *
 * @example
 * errorWords(session.error); // 'The service is briefly unavailable (its database is restarting). Try again in a moment.'
 */
export function errorWords(error: unknown): string {
  if (!(error instanceof TRPCClientError)) return UNREACHABLE;
  const data = (error.data ?? undefined) as { code?: string; httpStatus?: number } | undefined;
  if (!data) return UNREACHABLE;
  if (data.code === 'idempotency_store_unavailable' || data.httpStatus === 503) return UNAVAILABLE;
  if (data.httpStatus === 429) return 'Too many attempts. Try again in a moment.';
  if (data.httpStatus === 401 || data.httpStatus === 403) return 'You are not signed in.';
  return SOMETHING_WENT_WRONG;
}

const UNREACHABLE = 'The server could not be reached. Check your connection and try again.';
const UNAVAILABLE =
  'The service is briefly unavailable (its database is restarting). Try again in a moment.';
const SOMETHING_WENT_WRONG = 'Something went wrong on our side. Try again.';
