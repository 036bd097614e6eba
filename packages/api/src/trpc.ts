import {
  createIdempotencyPlugin,
  type IdempotencyMeta,
  idempotencyErrorData,
  idempotencyErrorFormatter,
} from '@once/idempotency/trpc';
import { initTRPC } from '@trpc/server';
import { authenticateRequest } from './auth/authenticate.ts';
import { recordGuardAnswer } from './checkout/pay-attempt-events.ts';
import type { Context } from './context.ts';
import type { Transaction } from './database.ts';
import { ApiError, isApiError } from './errors/api-error.ts';
import { apiErrorToTRPC, toTRPCError } from './errors/to-transport-error.ts';

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
     * ApiError code, the idempotency code, `invalid_input`, or the tRPC code lower-cased.
     * `data.idempotency` ({ code, retryAfterSeconds }) comes from the idempotency package.
     */
    errorFormatter(opts) {
      const shape = idempotencyErrorFormatter(opts);
      const { error } = opts;
      const cause = error.cause;
      const issues = error.code === 'BAD_REQUEST' ? inputIssues(cause) : undefined;
      const code = isApiError(cause)
        ? cause.code
        : (idempotencyErrorData(error)?.code ??
          (issues ? 'invalid_input' : shape.data.code.toLowerCase()));
      return {
        ...shape,
        // A 500 is a bug: its message (SQL with its parameters, a TypeError) is for the log,
        // never for the client.
        message: error.code === 'INTERNAL_SERVER_ERROR' ? 'Internal server error' : shape.message,
        data: {
          ...shape.data,
          code,
          trpcCode: shape.data.code,
          details: isApiError(cause) ? (cause.details ?? null) : null,
          issues: issues ?? null,
        },
      };
    },
  });

export const createTRPCRouter = t.router;
export const createCallerFactory = t.createCallerFactory;

/**
 * ApiErrors to their TRPCError, a failed input parse to `invalid_input`. Whether a refusal is
 * stored under an idempotency key is the guard's `errorOutcome`, not decided here.
 */
const mapDomainErrors = t.middleware(async ({ ctx, next }) => {
  const result = await next();
  if (result.ok) return result;
  const cause = result.error.cause;
  if (isApiError(cause)) {
    // A refusal that says when to come back also says it the standard way.
    const retryAfter = cause.details?.retryAfterSeconds;
    if (typeof retryAfter === 'number') ctx.resHeaders.set('retry-after', String(retryAfter));
    throw apiErrorToTRPC(cause);
  }
  // A database that is away: 503 idempotency_store_unavailable with Retry-After.
  const unavailable = toTRPCError(result.error, ctx.resHeaders);
  if (unavailable !== result.error) throw unavailable;
  const issues = result.error.code === 'BAD_REQUEST' ? inputIssues(result.error.cause) : undefined;
  if (issues) throw apiErrorToTRPC(new ApiError('invalid_input', 'Invalid input', { issues }));
  return result;
});

/** Anyone; no tenant. */
export const publicProcedure = t.procedure.use(mapDomainErrors);

/**
 * A tenant proven by `Authorization: Bearer <api key>` or the signed session cookie.
 * Adds `ctx.tenantId`, the caller's `role` and `principal`; never reads the tenant from the input.
 * `operatorOnly` refuses a shopper session with FORBIDDEN / `operator_required` before anything
 * is read; `sessionFromMemory` lets an operator session be taken as this process last confirmed
 * it while the database cannot be read (see `OperatorSessions`).
 */
const authenticated = (options: { operatorOnly: boolean; sessionFromMemory: boolean }) =>
  publicProcedure.use(async ({ ctx, next }) => {
    const who = await authenticateRequest({ ...ctx, sessionFromMemory: options.sessionFromMemory });
    if (options.operatorOnly && who.role !== 'operator') throw new ApiError('operator_required');
    return next({
      ctx: {
        tenantId: who.tenantId,
        tenantName: who.tenantName,
        auth: who.method,
        role: who.role,
        operatorCodeProven: who.operatorCodeProven,
        principal: who.principal,
      },
    });
  });

export const authedProcedure = authenticated({ operatorOnly: false, sessionFromMemory: false });

/** The merchant's own views (`ops.*`): an operator session or the merchant's API key. */
export const operatorProcedure = authenticated({ operatorOnly: true, sessionFromMemory: false });

/**
 * As {@link operatorProcedure}, for what needs no database (the demo's chaos switches and
 * parts): while the database cannot be read, an operator session this process confirmed lately
 * is taken as open. Never for money or keys: a sign-out on another process is not seen then.
 */
export const operatorProcedureWithoutDatabase = authenticated({
  operatorOnly: true,
  sessionFromMemory: true,
});

const idempotencyPlugin = createIdempotencyPlugin<
  Context & { tenantId: string; principal: string },
  Transaction
>({
  // The engine is per deployment (it owns the db), so it comes from the context.
  idempotency: (ctx) => ctx.idempotencyEngine,
  getTenantId: (ctx) => ctx.tenantId,
  // Each session and API key has its own new-key allowance: one cannot spend the merchant's.
  getPrincipal: (ctx) => ctx.principal,
  getRequestHeaders: (ctx) => ctx.headers,
  getResponseHeaders: (ctx) => ctx.resHeaders,
  // An API refusal means nothing happened: release the key so the client may fix and resend.
  // Any other 4xx a procedure throws is a deliberate outcome, stored and replayed.
  errorOutcome: (error) => (isApiError(error.cause) ? 'release' : 'store'),
  // A replayed or refused `pay` still shows on the payment's timeline.
  onAnswered: (answer, ctx) => recordGuardAnswer(ctx.db, answer, () => answer.data),
});

/**
 * The `Idempotency-Key` guard of a mutation. Concat it AFTER `.input()`, so malformed input
 * never reaches the key store nor spends new-key allowance; the handler should
 * `ctx.idempotency.complete(tx, ...)` inside its own transaction.
 */
export const idempotencyGuard = idempotencyPlugin.use(async ({ next }) => {
  // Inside the guard, so the plugin sees the refusal's own 4xx and applies `errorOutcome`.
  const result = await next();
  if (!result.ok && isApiError(result.error.cause)) throw apiErrorToTRPC(result.error.cause);
  return result;
});
