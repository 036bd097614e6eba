import type { AttemptOutcome } from '@once/idempotency/client';
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

/*
 * What the checkout says about an answer it could not use is worded HERE, never taken from the
 * error: a 500's message was the server's SQL ("Failed query: select ... from "tenants" ..."),
 * a cut answer's was the browser's ("Failed to execute 'json' on 'Response': ..."). The page
 * shows these words and the states' own; the error itself is only for the console.
 */

/** Nothing (usable) came back: refused, reset, or lost on the way. */
export const NO_ANSWER_DETAIL = 'the connection failed or broke off';
/** A success status whose body was cut: the request ran, its answer was lost. */
const CUT_ANSWER_DETAIL = 'the answer was cut off on its way';
/** A refusal the checkout has no words for (a code it does not know). */
export const GENERIC_REFUSAL =
  'Something went wrong. Your payment was not submitted twice; please try again';

const serverErrorDetail = (status: number) => `the server answered ${status}`;

/**
 * The refusals a shopper's checkout can meet, in the checkout's words (the API's catalogue
 * titles, `packages/api/src/errors/api-error.ts`): never the server's message, which may name
 * a product id or worse.
 */
const REFUSAL_WORDS: Record<string, string> = {
  empty_cart: 'The cart is empty',
  quantity_out_of_range: 'Quantity out of range',
  unknown_product: 'A product in the cart is no longer sold',
  mixed_currency: 'Products in different currencies',
  amount_out_of_range: 'Order total out of range',
  invalid_input: 'The payment request was not valid',
  payload_too_large: 'The payment request was too large',
  unsupported_media_type: 'The payment request was not sent as JSON',
  request_body_incomplete: 'The payment request arrived incomplete',
  operator_required: 'This session may not pay',
};

function refused(code: string): AttemptOutcome<never> {
  return { kind: 'rejected', code, message: REFUSAL_WORDS[code] ?? GENERIC_REFUSAL };
}

/**
 * Turns a failed `checkout.pay` call into what the checkout does next. No `data` and no
 * response means nothing came back (refused, reset, lost): the request may or may not have
 * run, which is exactly what the idempotency key makes safe to retry.
 */
export function classifyPayError(
  error: unknown,
  recorded: RecordedHeaders | undefined,
): AttemptOutcome<never> {
  if (!(error instanceof TRPCClientError)) return { kind: 'network', detail: NO_ANSWER_DETAIL };
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
    if (status === undefined) return { kind: 'network', detail: NO_ANSWER_DETAIL };
    // A success status whose body could not be read (cut mid-answer): the request ran, so
    // this is a lost answer, never a refusal; retrying with the key yields the stored one.
    if (status < 300) return { kind: 'network', detail: CUT_ANSWER_DETAIL };
    if (status >= 500) return { kind: 'server_error', status, detail: serverErrorDetail(status) };
    return refused(`http_${status}`);
  }

  const conflictWait = retryAfter ?? DEFAULT_CONFLICT_WAIT_SECONDS;
  switch (data.idempotency?.code ?? data.code) {
    case 'idempotency_key_in_use':
      return { kind: 'in_use', retryAfterSeconds: conflictWait };
    case 'idempotency_outcome_unknown':
      return { kind: 'outcome_unknown', retryAfterSeconds: conflictWait };
    case 'idempotency_key_reused':
      return { kind: 'key_reused' };
    case 'idempotency_store_unavailable':
      return { kind: 'store_unavailable', retryAfterSeconds: retryAfter };
    case 'idempotency_rate_limited':
      return { kind: 'rate_limited', retryAfterSeconds: retryAfter };
    case 'idempotency_lease_lost':
      // Another attempt of the same key took over; asking again yields a conflict or the replay.
      return {
        kind: 'server_error',
        status: status ?? 409,
        detail: serverErrorDetail(status ?? 409),
      };
  }
  if (status === 401) return { kind: 'unauthenticated' };
  if (status === 429) return { kind: 'rate_limited', retryAfterSeconds: retryAfter };
  if (status !== undefined && status >= 500) {
    return { kind: 'server_error', status, detail: serverErrorDetail(status) };
  }
  return refused(data.code ?? 'rejected');
}
