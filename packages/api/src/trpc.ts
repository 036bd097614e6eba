import {
  createIdempotencyPlugin,
  type IdempotencyMeta,
  idempotencyErrorData,
  idempotencyErrorFormatter,
} from '@once/idempotency/trpc';
import { initTRPC } from '@trpc/server';
import { authenticateRequest } from './auth/authenticate.ts';
import type { Context } from './context.ts';
import type { Transaction } from './database.ts';
import { CheckoutError, isCheckoutError } from './errors/checkout-error.ts';
import { toTRPCError } from './errors/to-transport-error.ts';

/** Issues of a failed input parse (zod via Standard Schema), if that is what failed. */
function inputIssues(cause: unknown): unknown[] | undefined {
  if (typeof cause === 'object' && cause !== null && 'issues' in cause) {
    const issues = (cause as { issues: unknown }).issues;
    if (Array.isArray(issues)) return issues;
  }
  return undefined;
}

const t = initTRPC
  .context<Context>()
  .meta<IdempotencyMeta>()
  .create({
    /**
     * Every error carries a stable, lower-case `data.code` a client can switch on: the
     * CheckoutError code, the idempotency code, `invalid_input`, or the tRPC code lower-cased.
     * `data.idempotency` ({ code, retryAfterSeconds }) comes from the idempotency package.
     */
    errorFormatter(opts) {
      const shape = idempotencyErrorFormatter(opts);
      const { error } = opts;
      const cause = error.cause;
      const issues = error.code === 'BAD_REQUEST' ? inputIssues(cause) : undefined;
      const code = isCheckoutError(cause)
        ? cause.code
        : (idempotencyErrorData(error)?.code ??
          (issues ? 'invalid_input' : shape.data.code.toLowerCase()));
      return {
        ...shape,
        data: {
          ...shape.data,
          code,
          trpcCode: shape.data.code,
          details: isCheckoutError(cause) ? (cause.details ?? null) : null,
          issues: issues ?? null,
        },
      };
    },
  });

export const createTRPCRouter = t.router;
export const createCallerFactory = t.createCallerFactory;

/**
 * Maps a CheckoutError thrown anywhere below it to its TRPCError (the one mapping lives in
 * `errors/checkout-error.ts`). It sits OUTSIDE the idempotency plugin on purpose: inside,
 * the plugin sees a non-TRPC error and releases the key, so refused input (unknown product,
 * empty cart) is never stored and the client may fix the cart and retry.
 */
const mapDomainErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && isCheckoutError(result.error.cause)) {
    throw toTRPCError(result.error.cause);
  }
  return result;
});

/**
 * Inside the idempotency plugin, a TRPCError with a 4xx status is a deliberate outcome the
 * plugin stores and replays. A malformed input is not an outcome: turning the input parser's
 * BAD_REQUEST into a CheckoutError (a plain error to the plugin) releases the key, and the
 * outer mapper still answers BAD_REQUEST with `data.code = 'invalid_input'`. Must sit between
 * the plugin and `.input()`.
 */
const refuseInvalidInputWithoutStoring = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.code === 'BAD_REQUEST') {
    const issues = inputIssues(result.error.cause);
    if (issues) throw new CheckoutError('invalid_input', 'Invalid input', { issues });
  }
  return result;
});

/** Anyone; no tenant. */
export const publicProcedure = t.procedure.use(mapDomainErrors);

/**
 * A tenant proven by `Authorization: Bearer <api key>` or the signed session cookie.
 * Adds `ctx.tenantId`; never reads the tenant from the input.
 */
export const authedProcedure = publicProcedure.use(async ({ ctx, next }) => {
  const who = await authenticateRequest({
    db: ctx.db,
    headers: ctx.headers,
    sessionSecret: ctx.sessionSecret,
    now: ctx.clock.now(),
  });
  return next({ ctx: { tenantId: who.tenantId, tenantName: who.tenantName, auth: who.method } });
});

const idempotencyPlugin = createIdempotencyPlugin<Context & { tenantId: string }, Transaction>({
  // The engine is per deployment (it owns the db), so it comes from the context.
  idempotency: (ctx) => ctx.idempotencyEngine,
  getTenantId: (ctx) => ctx.tenantId,
  getRequestHeaders: (ctx) => ctx.headers,
  getResponseHeaders: (ctx) => ctx.resHeaders,
});

/**
 * An authed procedure guarded by an `Idempotency-Key` (header). Give it
 * `.meta({ idempotency: { operation } })`; the handler gets `ctx.idempotency` and should
 * `complete(tx, ...)` inside its own transaction.
 */
export const idempotentProcedure = authedProcedure
  .concat(idempotencyPlugin)
  .use(refuseInvalidInputWithoutStoring);
