import { initTRPC, TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import {
  type IdempotencyAnswer,
  type KeyRefusal,
  keyRefusalOf,
  tellAnswered,
} from '../../core/answered.ts';
import type { Idempotency } from '../../core/engine.ts';
import { IdempotencyError, isIdempotencyError } from '../../core/errors.ts';
import { computeFingerprint } from '../../core/fingerprint.ts';
import {
  type JsonExecution,
  jsonExecution,
  jsonResponse,
  storedResultOf,
} from '../../core/json-execution.ts';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  parseIdempotencyKey,
} from '../../core/key.ts';
import type { OperationPolicy, StoredResponse } from '../../core/types.ts';
import { idempotencyErrorToTRPC } from './error-formatter.ts';
import { replayMiddlewareResult } from './replay-result.ts';
import { countGuardedCall, expectSent, explainBatched, warnHeadersLost } from './response-meta.ts';

/** `meta({ idempotency: {...} })` of a guarded procedure. */
export interface IdempotencyProcedureMeta extends OperationPolicy {
  /** Stable name of the operation; part of the key's scope and of the fingerprint. */
  operation: string;
  /** Refuse requests without a key (400 `idempotency_key_missing`). Default true. */
  required?: boolean;
}

/** Meta type to merge into your `initTRPC.meta<...>()` so `.concat(plugin)` type-checks. */
export type IdempotencyMeta = { idempotency?: IdempotencyProcedureMeta };

/**
 * `ctx.idempotency` inside a procedure: the execution, with `complete` taking the procedure's result.
 */
export type TrpcIdempotencyContext<TTx> = JsonExecution<TTx>;

/** Options of `createIdempotencyPlugin`. */
export interface IdempotencyPluginOptions<TContext, TTx> {
  /** The engine, or a function of the context when the engine is built per deployment/request. */
  idempotency: Idempotency<TTx> | ((ctx: TContext) => Idempotency<TTx>);
  getTenantId: (ctx: TContext) => string | Promise<string>;
  /** Who within the tenant spends the new-key allowance (a session, an API key). Default: the tenant. */
  getPrincipal?: (ctx: TContext) => string | undefined;
  getRequestHeaders?: (ctx: TContext) => Headers | undefined;
  getKey?: (ctx: TContext) => string | null | undefined;
  getResponseHeaders?: (ctx: TContext) => Headers | undefined;
  /**
   * What a procedure's client error (4xx) does to its key: `'store'` keeps it as a deliberate
   * outcome (a declined card) and replays it to every retry; `'release'` lets the key run
   * again (refused input the client may fix and resend). A 5xx always releases. Only leased
   * mode stores: in atomic mode nothing outside the handler's transaction is ever stored.
   * Default: every 4xx is stored, except input refused by the procedure's schema (a
   * `BAD_REQUEST` caused by an error with `issues`, as tRPC's input parsers throw): the
   * handler never ran, so the key is always released.
   */
  errorOutcome?: (error: TRPCError) => 'store' | 'release';
  /**
   * Told how each guarded call with a key was answered (executed, replayed from the key, or
   * refused by it: 409, 422) with the procedure's result (`data`; undefined when the answer
   * is an error), e.g. to record a replay or a refusal the procedure never sees. Runs once the
   * answer is decided, before it is returned; what it throws is logged and dropped.
   */
  onAnswered?: (answer: TrpcAnswer, ctx: TContext) => unknown;
}

/** What `onAnswered` hears: the answer, and the procedure's result as the caller gets it. */
export interface TrpcAnswer extends IdempotencyAnswer {
  data: unknown;
}

/** A stored tRPC error outcome (deliberate 4xx) so replays throw the same error. */
interface StoredTrpcError {
  trpcError: { code: TRPCError['code']; message: string };
}

/**
 * A reusable tRPC procedure plugin (use with `.concat()`), guarding every procedure whose meta
 * has `idempotency`. Reads the key from the request headers on ctx, scopes it by the tenant
 * from ctx, fingerprints the raw input, and either runs the procedure, replays the stored
 * result (setting `Idempotent-Replayed: true`), or throws a TRPCError whose `cause` is the
 * `IdempotencyError` (and sets `Retry-After` where it applies).
 *
 * @example
 * const idempotent = createIdempotencyPlugin({
 *   idempotency, getTenantId: (ctx: Context) => ctx.tenantId, // Tx inferred from the engine
 *   getRequestHeaders: (ctx) => ctx.headers, getResponseHeaders: (ctx) => ctx.resHeaders,
 * });
 * const pay = t.procedure.meta({ idempotency: { operation: 'checkout.pay' } }).concat(idempotent)
 *   .input(schema).mutation(({ ctx, input }) => db.transaction(async (tx) => {
 *     const result = await insertPayment(tx, input);
 *     await ctx.idempotency.complete(tx, result);
 *     return result;
 *   }));
 */
// No default for TTx: with `<Context>` alone it would be `unknown`, and `complete(db, result)`
// (outside the business transaction) would compile. Give both, or let both be inferred.
export function createIdempotencyPlugin<TContext extends object, TTx>(
  options: IdempotencyPluginOptions<TContext, TTx>,
) {
  const t = initTRPC.context<TContext>().meta<IdempotencyMeta>().create();
  const errorOutcome = options.errorOutcome ?? (() => 'store');

  return t.procedure.use(async (opts) => {
    const { meta, next } = opts;
    // tRPC's Simplify<> of a generic context is not assignable back to TContext; it is the same object.
    const ctx = opts.ctx as unknown as TContext;
    const idempotency =
      typeof options.idempotency === 'function' ? options.idempotency(ctx) : options.idempotency;
    const config = meta?.idempotency;
    // A chain that concatenates the guard but names no operation would run unguarded, and a
    // retry would run it again with nobody told: refuse it before the procedure runs.
    if (!config) throw unguardedChain(opts.path);
    const responseHeaders = options.getResponseHeaders?.(ctx);
    // One HTTP request has one header set, so one key: a tRPC batch shares it between its calls.
    const requestHeaders = options.getRequestHeaders?.(ctx);
    const request = requestHeaders ?? ctx;
    countGuardedCall(request);
    const fail = (error: unknown) => failWith(error, responseHeaders, request, opts.batchIndex);

    let key: string | undefined;
    try {
      const raw = options.getKey
        ? options.getKey(ctx)
        : requestHeaders?.get(IDEMPOTENCY_KEY_HEADER);
      key = parseIdempotencyKey(raw);
    } catch (error) {
      throw fail(error);
    }
    const tenantId = await options.getTenantId(ctx);
    if (key === undefined) {
      if (config.required === false) {
        const exec = idempotency.passthrough({ tenantId, operation: config.operation });
        return next({ ctx: { idempotency: jsonExecution(exec) } });
      }
      throw fail(new IdempotencyError('idempotency_key_missing'));
    }

    let fingerprint: string;
    try {
      fingerprint = computeFingerprint(config.operation, await opts.getRawInput());
    } catch (error) {
      throw fail(error);
    }
    const answered = (outcome: TrpcAnswer['outcome'], data: unknown, refusal?: KeyRefusal) =>
      tellAnswered(
        options.onAnswered,
        {
          outcome,
          tenantId,
          operation: config.operation,
          key: key!,
          fingerprint,
          data,
          ...(refusal ? { refusal } : {}),
        },
        ctx,
      );
    type Result = Awaited<ReturnType<typeof next<{ idempotency: JsonExecution<TTx> }>>>;
    let executedResult: Result | undefined;
    let outcome: Awaited<ReturnType<Idempotency<TTx>['execute']>>;
    try {
      outcome = await idempotency.execute(
        {
          tenantId,
          operation: config.operation,
          key,
          fingerprint,
          policy: config,
          principal: options.getPrincipal?.(ctx),
        },
        async (exec) => {
          const json = jsonExecution(exec);
          executedResult = await next({ ctx: { idempotency: json } });
          return storedOutcome(json, executedResult, errorOutcome);
        },
      );
    } catch (error) {
      const refusal = keyRefusalOf(error);
      if (refusal) await answered('refused', undefined, refusal);
      throw fail(error);
    }

    if (outcome.kind === 'executed' && executedResult) {
      await answered('executed', executedResult.ok ? executedResult.data : undefined);
      return executedResult;
    }
    if (responseHeaders) {
      responseHeaders.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
      expectSent(responseHeaders, IDEMPOTENT_REPLAYED_HEADER, opts.batchIndex);
    } else warnHeadersLost(IDEMPOTENT_REPLAYED_HEADER);
    const data = outcome.response.body === null ? undefined : JSON.parse(outcome.response.body);
    const failed = outcome.response.status >= 400;
    await answered('replayed', failed ? undefined : data);
    if (failed) {
      const stored = (data as StoredTrpcError).trpcError;
      throw new TRPCError({ code: stored.code, message: stored.message });
    }
    return replayMiddlewareResult<Result>(data);
  });
}

/**
 * What the key stores for the procedure's result: its data as JSON, a client error (4xx) that
 * `errorOutcome` stores, or a throw (the engine releases the key, or applies our own signal).
 */
function storedOutcome<TTx>(
  json: JsonExecution<TTx>,
  result: { ok: true; data: unknown } | { ok: false; error: TRPCError },
  errorOutcome: (error: TRPCError) => 'store' | 'release',
): StoredResponse {
  if (result.ok) return storedResultOf(json, result.data);
  const status = getHTTPStatusCodeFromError(result.error);
  const cause = result.error.cause;
  // Our own signals travel inside tRPC's error: unwrap so the engine applies its policy.
  if (isIdempotencyError(cause)) throw cause;
  // `.concat(guard).input(schema)` parses the input inside the guard: a refusal there comes
  // before the handler, and storing it would answer the corrected retry with 422 for 24 h.
  if (isInputRefusal(result.error)) throw result.error;
  if (status >= 400 && status < 500 && errorOutcome(result.error) === 'store') {
    const stored: StoredTrpcError = {
      trpcError: { code: result.error.code, message: result.error.message },
    };
    return jsonResponse(status, stored);
  }
  throw result.error;
}

/**
 * The error tRPC's input parser throws when the schema refuses the input: `BAD_REQUEST` with
 * the validator's error as `cause`, whose `issues` list what failed (zod, Standard Schema,
 * valibot, arktype all carry one).
 */
function isInputRefusal(error: TRPCError): boolean {
  const cause = error.cause as { issues?: unknown } | undefined;
  return error.code === 'BAD_REQUEST' && Array.isArray(cause?.issues);
}

const toldUnguarded = new Set<string>();

/** The refusal of a guarded chain without `meta({ idempotency })`, logged once per path. */
function unguardedChain(path: string): TRPCError {
  const message = `[@once/idempotency] tRPC procedure "${path}" concatenates the idempotency plugin but has no meta({ idempotency: { operation } }): refused, as it would run unguarded. Add .meta({ idempotency: { operation: '${path}' } }), or { operation, required: false } to let calls without a key through.`;
  if (!toldUnguarded.has(path)) {
    toldUnguarded.add(path);
    console.error(message);
  }
  return new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message });
}

/** Turn any failure into what the client sees; idempotency refusals get their mapped code. */
function failWith(
  error: unknown,
  responseHeaders: Headers | undefined,
  request: object,
  batchIndex: number | undefined,
): unknown {
  if (!isIdempotencyError(error)) return error;
  if (error.retryAfterSeconds !== undefined) {
    if (responseHeaders) {
      responseHeaders.set('Retry-After', String(error.retryAfterSeconds));
      expectSent(responseHeaders, 'Retry-After', batchIndex);
    } else warnHeadersLost('Retry-After');
  }
  return idempotencyErrorToTRPC(explainBatched(error, request, batchIndex));
}
