export interface StripeErrorFields {
  /** Stripe's error `type`s that this processor produces. */
  type: 'api_error' | 'card_error' | 'idempotency_error' | 'invalid_request_error';
  message: string;
  code?: string;
  decline_code?: string;
  param?: string;
  /** Extra members Stripe puts on some errors (e.g. `payment_intent` on card errors). */
  [extra: string]: unknown;
}

/**
 * The one domain error of the HTTP surface: thrown anywhere below a route, rendered once
 * by {@link stripeErrorResponse} in Stripe's `{ error: { type, code, ... } }` shape.
 */
export class StripeApiError extends Error {
  constructor(
    readonly status: number,
    readonly fields: StripeErrorFields,
    /** Sent as `Stripe-Should-Retry`; the SDK obeys it before its own status rules. */
    readonly shouldRetry?: boolean,
    readonly retryAfterSeconds?: number,
  ) {
    super(fields.message);
    this.name = 'StripeApiError';
  }
}

/** Renders a Stripe error body with its HTTP status. */
export function stripeErrorResponse(error: StripeApiError): Response {
  const headers = new Headers({ 'content-type': 'application/json' });
  if (error.shouldRetry !== undefined)
    headers.set('stripe-should-retry', String(error.shouldRetry));
  if (error.retryAfterSeconds !== undefined) {
    headers.set('retry-after', String(error.retryAfterSeconds));
  }
  return new Response(JSON.stringify({ error: error.fields }), { status: error.status, headers });
}

export function missingParam(param: string): StripeApiError {
  return new StripeApiError(400, {
    type: 'invalid_request_error',
    code: 'parameter_missing',
    param,
    message: `Missing required param: ${param}.`,
  });
}

export function invalidParam(
  param: string,
  message: string,
  code = 'parameter_invalid',
): StripeApiError {
  return new StripeApiError(400, { type: 'invalid_request_error', code, param, message });
}

export const MISSING_PAYMENT_METHOD =
  'You cannot confirm this PaymentIntent because it is missing a payment method.';

/** A PaymentIntent in a status that does not allow the call. */
export const unexpectedState = (message: string, param = 'intent') =>
  invalidParam(param, message, 'payment_intent_unexpected_state');

export function resourceMissing(objectName: string, id: string, param = 'id'): StripeApiError {
  return new StripeApiError(404, {
    type: 'invalid_request_error',
    code: 'resource_missing',
    param,
    message: `No such ${objectName}: '${id}'`,
  });
}
