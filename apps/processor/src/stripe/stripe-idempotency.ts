import { createIdempotency, type IdempotencyError } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { fetchIdempotency } from '@once/idempotency/fetch';
import type { ProcessorDatabase } from '../db/client.ts';
import type { IdempotentMutation } from './idempotent-mutation.ts';
import { StripeApiError, stripeErrorResponse } from './stripe-error.ts';

/**
 * Stripe's `Idempotency-Key` semantics on @once/idempotency: tenant = account, fingerprint =
 * method + path + decoded form params (parameter order never matters), refusals rendered as
 * Stripe's `idempotency_error`. A request without a key runs unguarded, as at Stripe.
 */
export function createStripeIdempotency(
  db: ProcessorDatabase,
  options: { leaseMs: number; ttlMs: number },
): IdempotentMutation {
  const http = fetchIdempotency(
    createIdempotency({
      store: createDrizzleStore(db),
      defaults: { ttlMs: options.ttlMs, leaseMs: options.leaseMs },
    }),
    {
      required: false,
      // Replayed with the stored body; `Request-Id` is per attempt, as at Stripe.
      replayHeaders: ['content-type'],
      renderError: (error, request) => stripeErrorResponse(toStripeError(error, request)),
    },
  );
  return (request, scope, run) =>
    http.handle(
      request,
      {
        tenantId: scope.accountId,
        // One key space per account, as at Stripe: the same key on another endpoint is a
        // different request (method and path are in the fingerprint), refused, never run twice.
        operation: 'stripe.v1',
        fingerprintInput: {
          method: request.method,
          path: new URL(request.url).pathname,
          params: scope.params,
        },
      },
      run,
    );
}

function toStripeError(error: IdempotencyError, request: Request): StripeApiError {
  const key = request.headers.get('idempotency-key') ?? '';
  const retryAfter = error.retryAfterSeconds;
  switch (error.code) {
    case 'idempotency_key_reused':
      return new StripeApiError(
        400,
        {
          type: 'idempotency_error',
          code: 'idempotency_key_reused',
          message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
        },
        false,
      );
    case 'idempotency_key_in_use':
    case 'idempotency_lease_lost':
    case 'idempotency_key_conflict':
      return new StripeApiError(
        409,
        {
          type: 'idempotency_error',
          code: 'idempotency_key_in_use',
          message:
            'There is currently another in-progress request using this Stripe API key and idempotency key. Please try again later.',
        },
        true,
        retryAfter ?? 1,
      );
    case 'idempotency_outcome_unknown':
      return new StripeApiError(
        409,
        {
          type: 'idempotency_error',
          code: 'idempotency_outcome_unknown',
          message: 'The outcome of the request with this idempotency key is being reconciled.',
        },
        true,
        retryAfter ?? 5,
      );
    case 'idempotency_key_invalid':
    case 'idempotency_key_missing':
      return new StripeApiError(
        400,
        {
          type: 'invalid_request_error',
          code: error.code,
          param: 'Idempotency-Key',
          message: 'Idempotency keys must be 1 to 255 printable ASCII characters.',
        },
        false,
      );
    case 'idempotency_key_expired':
      return new StripeApiError(
        409,
        { type: 'idempotency_error', code: error.code, message: error.message },
        false,
      );
    case 'idempotency_input_invalid':
      return new StripeApiError(
        400,
        { type: 'invalid_request_error', code: error.code, message: error.message },
        false,
      );
    case 'idempotency_rate_limited':
      return new StripeApiError(
        429,
        {
          type: 'api_error',
          code: 'rate_limit',
          message: 'Too many new idempotency keys.',
        },
        true,
        retryAfter ?? 1,
      );
    case 'idempotency_store_unavailable':
    case 'idempotency_response_too_large':
    case 'idempotency_outcome_ambiguous':
    case 'idempotency_completion_missing':
    case 'idempotency_result_unstorable':
    case 'idempotency_already_completed':
    case 'idempotency_complete_outside_transaction':
    case 'idempotency_answer_unreadable':
      return new StripeApiError(
        error.code === 'idempotency_store_unavailable' ? 503 : 500,
        { type: 'api_error', code: error.code, message: error.message },
        error.code === 'idempotency_store_unavailable',
        retryAfter,
      );
  }
}
