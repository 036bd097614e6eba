// Hono: the fetch adapter as a middleware. Imports Hono's types only.
export {
  type IdempotencyMiddlewareOptions,
  type IdempotencyVariables,
  idempotencyMiddleware,
} from './middleware.ts';
