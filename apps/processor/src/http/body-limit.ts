import { bodyLimit } from 'hono/body-limit';
import { StripeApiError, stripeErrorResponse } from '../stripe/stripe-error.ts';

/**
 * Largest request body the processor reads: 256 KiB. Stripe's own parameters stay far below
 * it (metadata is at most 50 keys of 40 + 500 characters, about 27 KiB encoded).
 */
export const PROCESSOR_MAX_BODY_BYTES = 256 * 1024;

/**
 * Refuses a body over `maxBytes` with 413 in Stripe's error shape before any route parses it:
 * by `Content-Length` when the client sent one, else by counting a chunked body as it is read
 * (Hono's `bodyLimit`, which stops reading at the limit). `Stripe-Should-Retry: false`: the
 * same request will never fit.
 */
export function processorBodyLimit(maxBytes = PROCESSOR_MAX_BODY_BYTES) {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () =>
      stripeErrorResponse(
        new StripeApiError(
          413,
          {
            type: 'invalid_request_error',
            code: 'payload_too_large',
            message: `The request body may be at most ${maxBytes} bytes.`,
          },
          false,
        ),
      ),
  });
}
