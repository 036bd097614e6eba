import type { Plugin } from '@envelop/core';
import { type ExecutionResult, GraphQLError, print } from 'graphql';
import type { Idempotency } from '../../core/engine.ts';
import { IdempotencyError, isIdempotencyError } from '../../core/errors.ts';
import type { Execution } from '../../core/execution.ts';
import { computeFingerprint } from '../../core/fingerprint.ts';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  parseIdempotencyKey,
} from '../../core/key.ts';
import type { StoredResponse } from '../../core/types.ts';
import { idempotentFieldsOf } from './idempotent-fields.ts';

/**
 * Options of {@link useIdempotency}. `TContext` is your GraphQL context (Yoga's has `request`).
 *
 * @example
 * useIdempotency({ idempotency, getTenantId: (ctx) => ctx.session.tenantId })
 */
export interface GraphqlIdempotencyOptions<TContext, TTx> {
  idempotency: Idempotency<TTx>;
  /** From authentication, never from the variables. */
  getTenantId: (context: TContext) => string | Promise<string>;
  getPrincipal?: (context: TContext) => string | undefined;
  /** Where the `Idempotency-Key` header is read. Default: `context.request.headers` (Yoga, most servers). */
  getRequestHeaders?: (context: TContext) => Headers | undefined;
}

/** What resolvers find on the context of a guarded mutation: `context.idempotency`. */
export interface GraphqlIdempotencyContext<TTx> {
  idempotency: Execution<TTx>;
}

/**
 * The GraphQL error a refusal becomes: `extensions.code` is the stable idempotency code
 * (`idempotency_key_in_use`, ...), and `extensions.http` carries the HTTP status and
 * `Retry-After`, which GraphQL Yoga applies to the response (other servers may ignore it).
 *
 * @example
 * toGraphqlError(new IdempotencyError('idempotency_key_reused')).extensions.code; // 'idempotency_key_reused'
 */
export function toGraphqlError(error: IdempotencyError): GraphQLError {
  const headers: Record<string, string> = {};
  if (error.retryAfterSeconds !== undefined)
    headers['Retry-After'] = String(error.retryAfterSeconds);
  return new GraphQLError(error.message, {
    originalError: error,
    extensions: {
      code: error.code,
      ...(error.retryAfterSeconds !== undefined
        ? { retryAfterSeconds: error.retryAfterSeconds }
        : {}),
      http: { status: error.status, headers },
    },
  });
}

function defaultHeaders(context: unknown): Headers | undefined {
  return (context as { request?: { headers?: Headers } }).request?.headers;
}

/**
 * An Envelop plugin (GraphQL Yoga, or anything built on Envelop) that guards the mutations a
 * schema marks idempotent (`@idempotent(operation: "...")` or a field's
 * `extensions.idempotency`): the key comes from the `Idempotency-Key` header, the first
 * request executes and its result is stored, a retry with the same key and the same document
 * and variables gets the stored result (plus `Idempotent-Replayed: true` on Yoga and
 * `extensions.idempotency.replayed` everywhere), and refusals are GraphQL errors with a stable
 * `extensions.code` and, on Yoga, the REST adapter's HTTP status (409, 422, 400, 503).
 *
 * A result with errors is not stored: the key is released and the request may run again.
 *
 * @example
 * const yoga = createYoga({ schema, plugins: [useIdempotency({ idempotency, getTenantId: (ctx) => ctx.tenantId })] });
 */
export function useIdempotency<TContext extends Record<string, unknown>, TTx = unknown>(
  options: GraphqlIdempotencyOptions<TContext, TTx>,
): Plugin<TContext> & {
  onResponse?: (payload: { request: Request; response: Response }) => void;
} {
  const replayedRequests = new WeakSet<object>();
  const getHeaders = options.getRequestHeaders ?? defaultHeaders;
  return {
    async onExecute({ args, executeFn, setResultAndStopExecution }) {
      const guarded = idempotentFieldsOf(args.schema, args.document, args.operationName);
      if (guarded.length === 0) return;
      const context = args.contextValue as TContext;
      const stop = (error: unknown) => {
        if (!isIdempotencyError(error)) throw error;
        setResultAndStopExecution({ errors: [toGraphqlError(error)] });
      };
      if (guarded.length > 1) {
        return stop(new IdempotencyError('idempotency_key_invalid'));
      }
      const config = guarded[0]!;
      let key: string | undefined;
      try {
        key = parseIdempotencyKey(getHeaders(context)?.get(IDEMPOTENCY_KEY_HEADER));
        if (key === undefined && config.required !== false)
          throw new IdempotencyError('idempotency_key_missing');
      } catch (error) {
        return stop(error);
      }
      if (key === undefined) return;
      const tenantId = await options.getTenantId(context);
      const fingerprint = computeFingerprint(config.operation, {
        document: print(args.document),
        operationName: args.operationName ?? null,
        variables: args.variableValues ?? {},
      });
      let executed: ExecutionResult | undefined;
      try {
        const outcome = await options.idempotency.execute(
          {
            tenantId,
            operation: config.operation,
            key,
            fingerprint,
            policy: config,
            principal: options.getPrincipal?.(context),
          },
          async (exec): Promise<StoredResponse> => {
            const result = (await executeFn({
              ...args,
              contextValue: Object.assign(context, { idempotency: exec }),
            })) as ExecutionResult;
            if (result.errors?.length) {
              executed = result;
              // Not stored: the key is released and the mutation may run again.
              throw new ReleaseWithResult();
            }
            executed = result;
            return {
              status: 200,
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ data: result.data ?? null }),
            };
          },
        );
        if (outcome.kind === 'executed' && executed) return setResultAndStopExecution(executed);
        const request = (context as { request?: object }).request;
        if (request) replayedRequests.add(request);
        const stored = JSON.parse(outcome.response.body ?? '{}') as ExecutionResult;
        setResultAndStopExecution({
          ...stored,
          extensions: { ...stored.extensions, idempotency: { replayed: true } },
        });
      } catch (error) {
        if (error instanceof ReleaseWithResult && executed)
          return setResultAndStopExecution(executed);
        stop(error);
      }
    },
    onResponse({ request, response }) {
      if (replayedRequests.has(request)) response.headers.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
    },
  };
}

/** Thrown out of the engine so the key is released, while the client still gets its errors. */
class ReleaseWithResult extends Error {}
