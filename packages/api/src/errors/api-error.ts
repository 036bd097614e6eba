import type { TRPC_ERROR_CODE_KEY } from '@trpc/server';

/**
 * Every refusal the API can give (authentication, checkout input, operator views), with the ONE mapping to tRPC codes and HTTP
 * statuses. The tRPC error middleware and the REST problem+json renderer both read this
 * table, so a code means the same thing on every transport.
 */
export const apiErrorCatalogue = {
  unauthenticated: { trpcCode: 'UNAUTHORIZED', status: 401, title: 'Authentication required' },
  invalid_credentials: { trpcCode: 'UNAUTHORIZED', status: 401, title: 'Invalid credentials' },
  demo_login_disabled: { trpcCode: 'FORBIDDEN', status: 403, title: 'Demo login is disabled' },
  demo_operator_login_disabled: {
    trpcCode: 'FORBIDDEN',
    status: 403,
    title: 'Demo operator sign-in is disabled (no operator code is configured); use the API key',
  },
  operator_code_invalid: {
    trpcCode: 'UNAUTHORIZED',
    status: 401,
    title: 'The operator code is missing or wrong',
  },
  session_rate_limited: {
    trpcCode: 'TOO_MANY_REQUESTS',
    status: 429,
    title: 'Too many sign-ins; try again after Retry-After seconds',
  },
  operator_required: {
    trpcCode: 'FORBIDDEN',
    status: 403,
    title: 'An operator credential is required',
  },
  operator_code_required: {
    trpcCode: 'FORBIDDEN',
    status: 403,
    title: 'The chaos switches need a session signed in with the operator code',
  },
  chaos_switches_disabled: {
    trpcCode: 'NOT_FOUND',
    status: 404,
    title: 'Chaos switches are not enabled (demo launcher only)',
  },
  chaos_switch_failed: {
    trpcCode: 'CONFLICT',
    status: 409,
    title: 'The chaos switch could not act',
  },
  chaos_switch_rate_limited: {
    trpcCode: 'TOO_MANY_REQUESTS',
    status: 429,
    title: 'This chaos switch was pressed too recently; try again after Retry-After seconds',
  },
  invalid_input: { trpcCode: 'BAD_REQUEST', status: 400, title: 'Invalid request' },
  empty_cart: { trpcCode: 'BAD_REQUEST', status: 400, title: 'The cart is empty' },
  quantity_out_of_range: {
    trpcCode: 'BAD_REQUEST',
    status: 400,
    title: 'Quantity out of range',
  },
  unknown_product: { trpcCode: 'BAD_REQUEST', status: 400, title: 'Unknown product' },
  mixed_currency: {
    trpcCode: 'BAD_REQUEST',
    status: 400,
    title: 'Products in different currencies',
  },
  amount_out_of_range: {
    trpcCode: 'BAD_REQUEST',
    status: 400,
    title: 'Order total out of range',
  },
  payment_not_found: { trpcCode: 'NOT_FOUND', status: 404, title: 'Payment not found' },
  payment_not_authorized: {
    trpcCode: 'CONFLICT',
    status: 409,
    title: 'Only an authorised payment with no capture or void under way can be captured or voided',
  },
  payment_not_refundable: {
    trpcCode: 'CONFLICT',
    status: 409,
    title: 'Only a succeeded or captured payment can be refunded',
  },
  refund_amount_too_large: {
    trpcCode: 'BAD_REQUEST',
    status: 400,
    title: 'The refund is greater than what is left to refund on this payment',
  },
  capture_amount_too_large: {
    trpcCode: 'BAD_REQUEST',
    status: 400,
    title: 'The capture amount is greater than the authorised amount',
  },
  idempotency_key_not_found: {
    trpcCode: 'NOT_FOUND',
    status: 404,
    title: 'No such idempotency key',
  },
  idempotency_key_changed: {
    trpcCode: 'CONFLICT',
    status: 409,
    title: 'The idempotency key changed since it was read; look again before acting',
  },
  idempotency_key_not_releasable: {
    trpcCode: 'CONFLICT',
    status: 409,
    title: 'This idempotency key may not be released in its state',
  },
  idempotency_key_not_evictable: {
    trpcCode: 'CONFLICT',
    status: 409,
    title: 'This idempotency key may not be evicted in its state',
  },
  webhook_event_not_found: {
    trpcCode: 'NOT_FOUND',
    status: 404,
    title: 'No such webhook event for this merchant',
  },
  request_body_incomplete: {
    trpcCode: 'BAD_REQUEST',
    status: 400,
    title: 'The request body ended before it was complete (the client went away)',
  },
  payload_too_large: {
    trpcCode: 'PAYLOAD_TOO_LARGE',
    status: 413,
    title: 'Request body too large',
  },
  unsupported_media_type: {
    trpcCode: 'UNSUPPORTED_MEDIA_TYPE',
    status: 415,
    title: 'Unsupported Content-Type',
  },
  host_not_allowed: {
    trpcCode: 'FORBIDDEN',
    status: 403,
    title: 'This server does not answer to that Host name',
  },
} as const satisfies Record<
  string,
  { trpcCode: TRPC_ERROR_CODE_KEY; status: number; title: string }
>;

export type ApiErrorCode = keyof typeof apiErrorCatalogue;

/** Base of the problem+json `type` URIs; documented in packages/api/README.md. */
export const API_PROBLEM_TYPE_BASE = 'https://once.dev/problems/';

/**
 * The one error of the API: authentication refusals (`unauthenticated`,
 * `invalid_credentials`, ...) as much as checkout ones (`unknown_product`, ...). Business code
 * throws it; transports map it through {@link apiErrorCatalogue} and never invent their own
 * codes.
 */
export class ApiError extends Error {
  readonly _tag = 'ApiError' as const;
  override readonly name = 'ApiError';
  constructor(
    readonly code: ApiErrorCode,
    message: string = apiErrorCatalogue[code].title,
    /** Safe-to-show details (which product, which line); never secrets. */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }

  get status(): number {
    return apiErrorCatalogue[this.code].status;
  }

  get trpcCode(): TRPC_ERROR_CODE_KEY {
    return apiErrorCatalogue[this.code].trpcCode;
  }
}

/**
 * THE way to test for an `ApiError` (a tag check, so it also works across duplicated module
 * copies, like `isIdempotencyError`).
 */
export function isApiError(value: unknown): value is ApiError {
  return (
    value instanceof ApiError ||
    (typeof value === 'object' &&
      value !== null &&
      (value as { _tag?: unknown })._tag === 'ApiError' &&
      typeof (value as { code?: unknown }).code === 'string')
  );
}
