import { createGraphqlHandler, GRAPHQL_ENDPOINT } from '../graphql-api.ts';
import { createHealthHandler } from '../health.ts';
import { createOpenApiHandler } from '../openapi.ts';
import {
  createPaymentCancelHandler,
  createPaymentCaptureHandler,
  createPaymentRefundHandler,
  createPaymentRefundsGetHandler,
} from '../payment-actions-api.ts';
import { createPaymentGetHandler, createPaymentsPostHandler } from '../payments-api.ts';
import { createProcessorWebhookHandler } from '../processor-webhook.ts';
import type { WebRuntime } from '../runtime.ts';
import { createTrpcHandler } from '../trpc-handler.ts';

/** A handler of `app/api/v1/payments/[id]/**` (the id from the path). */
type PaymentRoute = (request: Request, paymentId: string) => Promise<Response>;

/**
 * The same handlers `app/api/**\/route.ts` export, dispatched by path the way Next's router
 * would, for tests that serve them over real HTTP without starting Next.
 */
export function webApiRoutes(getRuntime: () => Promise<WebRuntime>) {
  const trpc = createTrpcHandler(getRuntime);
  const postPayment = createPaymentsPostHandler(getRuntime);
  const getPayment = createPaymentGetHandler(getRuntime);
  // `app/api/v1/payments/[id]/<action>/route.ts`, by method.
  const paymentRoutes: Record<string, Record<string, PaymentRoute>> = {
    '': { GET: getPayment },
    '/capture': { POST: createPaymentCaptureHandler(getRuntime) },
    '/cancel': { POST: createPaymentCancelHandler(getRuntime) },
    '/refunds': {
      POST: createPaymentRefundHandler(getRuntime),
      GET: createPaymentRefundsGetHandler(getRuntime),
    },
  };
  const webhook = createProcessorWebhookHandler(getRuntime);
  const health = createHealthHandler(getRuntime);
  const openApi = createOpenApiHandler();
  const graphql = createGraphqlHandler(getRuntime);
  return async (request: Request): Promise<Response> => {
    const { pathname } = new URL(request.url);
    if (pathname.startsWith('/api/trpc/')) return trpc(request);
    if (pathname === GRAPHQL_ENDPOINT) return graphql(request);
    if (pathname === '/api/health' && request.method === 'GET') return health();
    if (pathname === '/api/openapi' && request.method === 'GET') return openApi();
    if (pathname === '/api/v1/payments' && request.method === 'POST') return postPayment(request);
    const payment = /^\/api\/v1\/payments\/([^/]+)(|\/capture|\/cancel|\/refunds)$/.exec(pathname);
    const route = payment && paymentRoutes[payment[2]!]?.[request.method];
    if (payment && route) return route(request, decodeURIComponent(payment[1]!));
    if (pathname === '/api/webhooks/processor' && request.method === 'POST')
      return webhook(request);
    return new Response('not found', { status: 404 });
  };
}
