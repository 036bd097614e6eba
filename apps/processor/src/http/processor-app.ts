import { Hono } from 'hono';
import { type AdminApiOptions, createAdminApi } from '../admin/admin-api.ts';
import { StripeApiError, stripeErrorResponse } from '../stripe/stripe-error.ts';
import { processorBodyLimit } from './body-limit.ts';
import { createStripeApi, type StripeApiOptions } from './stripe-api.ts';
import { createThreeDSecurePages } from './three-d-secure.ts';

/**
 * The whole HTTP surface: `/healthz`, the Stripe-compatible `/v1` API and `/admin`.
 */
export function createProcessorApp(options: StripeApiOptions & AdminApiOptions) {
  const app = new Hono();
  // Before every route: no body over the limit is read, parsed or fingerprinted.
  app.use('*', processorBodyLimit());
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
