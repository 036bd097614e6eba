import { createIdempotency, type IdempotencyError } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { fetchIdempotency } from '@once/idempotency/fetch';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import type { FormParams } from './form-params.ts';
import { StripeApiError, stripeErrorResponse } from './stripe-error.ts';

/**
 * Runs a POST under the request's `Idempotency-Key` (scoped to the account): a fresh key
 * runs `run` once, a finished key replays, a concurrent or reused key is refused with
 * Stripe's `idempotency_error`. Without a key, `run` simply runs. `exec.complete` stores the
 * response as the key's result inside `tx`: it commits with the charge or not at all.
 */
export type IdempotentMutation = (
  request: Request,
  scope: { accountId: string; params: FormParams },
  run: (exec: {
    complete(tx: ProcessorTransaction, response: Response): Promise<void>;
  }) => Promise<Response>,
) => Promise<Response>;

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

const KEY_IN_USE =
  'There is currently another in-progress request using this Stripe API key and idempotency key. Please try again later.';

function toStripeError(error: IdempotencyError, request: Request): StripeApiError {
  const { code, message, retryAfterSeconds: retryAfter } = error;
  switch (code) {
    case 'idempotency_key_reused': {
      const key = request.headers.get('idempotency-key') ?? '';
      const reused = `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`;
      return new StripeApiError(400, { type: 'idempotency_error', code, message: reused }, false);
    }
    case 'idempotency_key_in_use':
    case 'idempotency_lease_lost':
    case 'idempotency_key_conflict':
      return new StripeApiError(
        409,
        { type: 'idempotency_error', code: 'idempotency_key_in_use', message: KEY_IN_USE },
        true,
        retryAfter ?? 1,
      );
    case 'idempotency_outcome_unknown': {
      const unknown = 'The outcome of the request with this idempotency key is being reconciled.';
      return new StripeApiError(
        409,
        { type: 'idempotency_error', code, message: unknown },
        true,
        retryAfter ?? 5,
      );
    }
    case 'idempotency_key_invalid':
    case 'idempotency_key_missing': {
      const invalid = 'Idempotency keys must be 1 to 255 printable ASCII characters.';
      const fields = { code, param: 'Idempotency-Key', message: invalid };
      return new StripeApiError(400, { type: 'invalid_request_error', ...fields }, false);
    }
    case 'idempotency_key_expired':
      return new StripeApiError(409, { type: 'idempotency_error', code, message }, false);
    case 'idempotency_input_invalid':
      return new StripeApiError(400, { type: 'invalid_request_error', code, message }, false);
    case 'idempotency_rate_limited': {
      const fields = { code: 'rate_limit', message: 'Too many new idempotency keys.' };
      return new StripeApiError(429, { type: 'api_error', ...fields }, true, retryAfter ?? 1);
    }
    case 'idempotency_store_unavailable':
      return new StripeApiError(503, { type: 'api_error', code, message }, true, retryAfter);
    case 'idempotency_response_too_large':
    case 'idempotency_outcome_ambiguous':
    case 'idempotency_completion_missing':
    case 'idempotency_result_unstorable':
    case 'idempotency_already_completed':
    case 'idempotency_complete_outside_transaction':
    case 'idempotency_answer_unreadable':
      return new StripeApiError(500, { type: 'api_error', code, message }, false, retryAfter);
  }
}
