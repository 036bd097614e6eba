import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { type AdminApiOptions, createAdminApi } from '../admin/admin-api.ts';
import { StripeApiError, stripeErrorResponse } from '../stripe/stripe-error.ts';
import { createStripeApi, type StripeApiOptions } from './stripe-api.ts';
import { createThreeDSecurePages } from './three-d-secure.ts';

/**
 * Largest request body the processor reads: 256 KiB. Stripe's own parameters stay far below
 * it (metadata is at most 50 keys of 40 + 500 characters, about 27 KiB encoded).
 */
export const PROCESSOR_MAX_BODY_BYTES = 256 * 1024;

/** The whole HTTP surface: `/healthz`, the Stripe-compatible `/v1` API and `/admin`. */
export function createProcessorApp(options: StripeApiOptions & AdminApiOptions) {
  const app = new Hono();
  // Before every route, no body over the limit is read, parsed or fingerprinted: refused by
  // `Content-Length`, or by counting a chunked body as it is read (Hono's `bodyLimit` stops
  // reading at the limit). `Stripe-Should-Retry: false`: the same request will never fit.
  const tooLarge = new StripeApiError(
    413,
    {
      type: 'invalid_request_error',
      code: 'payload_too_large',
      message: `The request body may be at most ${PROCESSOR_MAX_BODY_BYTES} bytes.`,
    },
    false,
  );
  app.use(
    '*',
    bodyLimit({ maxSize: PROCESSOR_MAX_BODY_BYTES, onError: () => stripeErrorResponse(tooLarge) }),
  );
  app.get('/healthz', (c) => c.json({ ok: true, service: 'processor' }));
  app.route('/', createAdminApi(options));
  app.route('/', createStripeApi(options));
  app.route('/', createThreeDSecurePages(options));
  app.onError((error) => {
    if (error instanceof StripeApiError) return stripeErrorResponse(error);
    options.log(
      `internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    return stripeErrorResponse(
      new StripeApiError(500, { type: 'api_error', message: 'An unexpected error occurred.' }),
    );
  });
  app.notFound((c) =>
    stripeErrorResponse(
      new StripeApiError(404, {
        type: 'invalid_request_error',
        message: `Unrecognized request URL (${c.req.method}: ${c.req.path}).`,
      }),
    ),
  );
  return app;
}
