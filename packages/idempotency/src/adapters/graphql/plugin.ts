import type { Plugin } from '@envelop/core';
import { type ASTNode, type ExecutionResult, GraphQLError } from 'graphql';
import {
  type IdempotencyAnswer,
  type KeyRefusal,
  keyRefusalOf,
  tellAnswered,
} from '../../core/answered.ts';
import { isLostConnection } from '../../core/commit-outcome.ts';
import type { Idempotency } from '../../core/engine.ts';
import { IdempotencyError, isIdempotencyError } from '../../core/errors.ts';
import type { Execution } from '../../core/execution.ts';
import { computeFingerprint } from '../../core/fingerprint.ts';
import { jsonResponse } from '../../core/json-execution.ts';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  parseIdempotencyKey,
} from '../../core/key.ts';
import { INITIAL_RECOVERY_POINT, type StoredResponse } from '../../core/types.ts';
import {
  type RootSelection,
  rootSelectionOf,
  UndecidableDirectiveError,
} from './idempotent-fields.ts';

/** Options of {@link useIdempotency}. `TContext` is your GraphQL context (Yoga's has `request`). */
export interface GraphqlIdempotencyOptions<TContext, TTx> {
  idempotency: Idempotency<TTx>;
  /** From authentication, never from the variables. */
  getTenantId: (context: TContext) => string | Promise<string>;
  getPrincipal?: (context: TContext) => string | undefined;
  /** Where the `Idempotency-Key` header is read. Default: `context.request.headers` (Yoga, most servers). */
  getRequestHeaders?: (context: TContext) => Headers | undefined;
  /**
   * How each error of a guarded operation is shown and stored for replays. The guard answers
   * with the result itself, so a masking plugin after it (Yoga's `maskedErrors`) never sees
   * it: give the same rule here. Default {@link maskUnexpectedError}.
   */
  maskError?: (error: GraphQLError) => GraphQLError;
  /**
   * Told how each guarded mutation with a key was answered (executed, replayed from the key,
   * or refused by it: 409, 422) with the result sent and the guarded field's response key in
   * it, e.g. to record a replay or a refusal the resolver never sees. Runs once the answer is
   * decided, before it is sent; what it throws is logged and dropped.
   */
  onAnswered?: (answer: GraphqlAnswer, context: TContext) => unknown;
}

/**
 * What `onAnswered` hears: the answer, the result as the client gets it, and where the
 * guarded field sits in it (`result.data?.[responseKey]`: the request's alias, if any). An
 * executed or replayed `result` is the object then sent: the hook may add to its `extensions`
 * (what the key stores is already written and stays as it was).
 */
export interface GraphqlAnswer extends IdempotencyAnswer {
  result: ExecutionResult;
  responseKey: string;
}

/**
 * Stable codes of the guard's own refusals of a document (400, nothing ran, nothing stored):
 * - `idempotency_guarded_fields_multiple`: more than one guarded field would execute (another
 *   field, an alias, or a fragment); a key guards one.
 * - `idempotency_guarded_field_undecidable`: a guarded field the guard cannot see execute
 *   (under a fragment on a type without that field, below another field returning the
 *   mutation type, or behind an `@skip` / `@include` the variables do not decide).
 */
type GraphqlGuardRefusalCode =
  | 'idempotency_guarded_fields_multiple'
  | 'idempotency_guarded_field_undecidable';

/** The message of a masked error. */
export const UNEXPECTED_ERROR_MESSAGE = 'Unexpected error.';

/**
 * The default `maskError`: an error raised as a GraphQLError on purpose (validation, a
 * resolver's deliberate refusal) is kept, an idempotency refusal keeps its stable code, and
 * anything else (a database error with SQL and host names, a bug) becomes
 * "Unexpected error." with `extensions.code: 'INTERNAL_SERVER_ERROR'` and its path.
 */
export function maskUnexpectedError(error: GraphQLError): GraphQLError {
  let cause: unknown = error;
  // By name, as Envelop does: errors from another copy of graphql fail `instanceof`.
  while (isGraphqlError(cause)) cause = cause.originalError;
  if (cause === undefined || cause === null) return error;
  const at = {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
  };
  if (isIdempotencyError(cause)) {
    if (error.extensions?.code === cause.code) return error;
    return new GraphQLError(cause.message, { ...at, extensions: toGraphqlError(cause).extensions });
  }
  return new GraphQLError(UNEXPECTED_ERROR_MESSAGE, {
    ...at,
    extensions: { code: 'INTERNAL_SERVER_ERROR' },
  });
}

/** What resolvers find on the context of a guarded mutation: `context.idempotency`. */
export interface GraphqlIdempotencyContext<TTx> {
  idempotency: Execution<TTx>;
}

/**
 * The GraphQL error a refusal becomes: `extensions.code` is the stable idempotency code
 * (`idempotency_key_in_use`, ...), and `extensions.http` carries the HTTP status and
 * `Retry-After`, which GraphQL Yoga applies to the response (other servers may ignore it).
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

function isGraphqlError(value: unknown): value is GraphQLError {
  return value instanceof Error && value.name === 'GraphQLError';
}

function defaultHeaders(context: unknown): Headers | undefined {
  return (context as { request?: { headers?: Headers } }).request?.headers;
}

/**
 * An Envelop plugin (GraphQL Yoga, or anything built on Envelop) that guards the mutations a
 * schema marks idempotent (`@idempotent(operation: "...")` or a field's
 * `extensions.idempotency`): the key comes from the `Idempotency-Key` header, the first
 * request executes and its result is stored, a retry with the same key asking the same
 * guarded field with the same arguments gets the stored result (plus `Idempotent-Replayed:
 * true` on Yoga and `extensions.idempotency.replayed` everywhere), and refusals are GraphQL
 * errors with a stable `extensions.code` and, on Yoga, the REST adapter's HTTP status (409,
 * 422, 400, 503).
 *
 * The guarded field is found the way execution finds fields (through fragments, `@skip` and
 * `@include`); a document with two, or with one the guard cannot place, is refused (400)
 * before anything runs. The fingerprint is the guarded field's name and its resolved arguments
 * (plus any other root field's response key, name and arguments), not the selection set nor
 * the operation name: a replay answers the first request's selection.
 *
 * A result whose guarded field itself failed (an error at exactly its response key, no value)
 * releases the key, unless it failed on a lost database connection after its resolver advanced
 * the key (`exec.advance(tx, ...)`): its COMMIT may have happened, so the answer is 409
 * `idempotency_outcome_unknown` and the key waits for the retry. Any other result is stored
 * as sent, errors included, and replayed as-is.
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
  const maskError = options.maskError ?? maskUnexpectedError;
  const masked = (result: ExecutionResult): ExecutionResult =>
    result.errors?.length ? { ...result, errors: result.errors.map(maskError) } : result;
  return {
    async onExecute({ args, executeFn, setResultAndStopExecution }) {
      const context = args.contextValue as TContext;
      const call = guardedCallOf(args, () => getHeaders(context));
      if (!call) return;
      if ('errors' in call) return setResultAndStopExecution(call);
      const { selection, field, key } = call;
      const stop = (error: unknown) => {
        if (!isIdempotencyError(error)) throw error;
        setResultAndStopExecution({ errors: [toGraphqlError(error)] });
      };
      const tenantId = await options.getTenantId(context);
      // What the request asks to happen, not how it spells it: the selection set, the alias
      // and the operation name only shape the answer (a replay answers the first selection).
      const fingerprint = computeFingerprint(field.config.operation, {
        field: field.name,
        arguments: field.arguments,
        others: selection.others,
      });
      const scope = { tenantId, operation: field.config.operation };
      const answered = (
        result: ExecutionResult,
        outcome: GraphqlAnswer['outcome'],
        refusal?: KeyRefusal,
      ) =>
        tellAnswered(
          options.onAnswered,
          {
            outcome,
            ...scope,
            key,
            fingerprint,
            result,
            responseKey: field.responseKey,
            ...(refusal ? { refusal } : {}),
          },
          context,
        );
      let executed: ExecutionResult | undefined;
      try {
        const outcome = await options.idempotency.execute(
          {
            ...scope,
            key,
            fingerprint,
            policy: field.config,
            principal: options.getPrincipal?.(context),
          },
          async (exec): Promise<StoredResponse> => {
            const result = (await executeFn({
              ...args,
              contextValue: Object.assign(context, { idempotency: exec }),
            })) as ExecutionResult;
            // Its connection lost after a phase was written (maybe during COMMIT): whatever
            // the resolver made of it, the engine sees the cut, keeps the key and answers 409.
            const cut = lostConnectionAt(result, field.responseKey);
            if (cut && exec.recoveryPoint !== INITIAL_RECOVERY_POINT) throw cut;
            executed = masked(result);
            // Not stored: the key is released and the mutation may run again.
            if (failedBeforeCompleting(executed, field.responseKey)) throw new ReleaseWithResult();
            const stored: StoredResult = {
              data: executed.data ?? null,
              ...(executed.errors?.length ? { errors: executed.errors } : {}),
              responseKey: field.responseKey,
            };
            return jsonResponse(200, stored);
          },
        );
        if (outcome.kind === 'executed' && executed) {
          await answered(executed, 'executed');
          return setResultAndStopExecution(executed);
        }
        const request = (context as { request?: object }).request;
        if (request) replayedRequests.add(request);
        const stored = JSON.parse(outcome.response.body ?? '{}') as StoredResult;
        const replayed = replayAs(stored, field.responseKey);
        await answered(replayed, 'replayed');
        setResultAndStopExecution(replayed);
      } catch (error) {
        if (error instanceof ReleaseWithResult && executed)
          return setResultAndStopExecution(executed);
        const refusal = keyRefusalOf(error);
        if (refusal)
          await answered(
            { errors: [toGraphqlError(error as IdempotencyError)] },
            'refused',
            refusal,
          );
        stop(error);
      }
    },
    onResponse({ request, response }) {
      if (replayedRequests.has(request)) response.headers.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
    },
  };
}

/**
 * What the guard does with a request before anything runs: nothing (no guarded field, or no
 * key where none is required), refuse it (`errors`), or guard its one guarded `field` by `key`.
 */
function guardedCallOf(
  args: Parameters<NonNullable<Plugin['onExecute']>>[0]['args'],
  headers: () => Headers | undefined,
):
  | { errors: GraphQLError[] }
  | { selection: RootSelection; field: RootSelection['guarded'][number]; key: string }
  | undefined {
  let selection: RootSelection | undefined;
  try {
    selection = rootSelectionOf(
      args.schema,
      args.document,
      args.operationName,
      args.variableValues,
    );
  } catch (error) {
    if (!(error instanceof UndecidableDirectiveError)) throw error;
    const message = `The idempotency guard cannot tell which fields run: ${error.message}.`;
    return {
      errors: [documentRefusal('idempotency_guarded_field_undecidable', message, error.nodes)],
    };
  }
  if (!selection) return undefined;
  const refusal = refusalOf(selection);
  if (refusal) return { errors: [refusal] };
  const field = selection.guarded[0];
  if (!field) return undefined;
  let key: string | undefined;
  try {
    key = parseIdempotencyKey(headers()?.get(IDEMPOTENCY_KEY_HEADER));
    if (key === undefined && field.config.required !== false)
      throw new IdempotencyError('idempotency_key_missing');
  } catch (error) {
    if (!isIdempotencyError(error)) throw error;
    return { errors: [toGraphqlError(error)] };
  }
  return key === undefined ? undefined : { selection, field, key };
}

function refusalOf(selection: RootSelection): GraphQLError | undefined {
  if (selection.unseen.length > 0) {
    return documentRefusal(
      'idempotency_guarded_field_undecidable',
      'A guarded field is selected where the idempotency guard cannot see it run (under a fragment on another type, or below another field); select it at the root of the mutation.',
      selection.unseen,
    );
  }
  if (selection.guarded.length > 1) {
    return documentRefusal(
      'idempotency_guarded_fields_multiple',
      `An Idempotency-Key guards one guarded field per request; this one would run ${selection.guarded.length} (${selection.guarded.map((f) => f.responseKey).join(', ')}). Send them as separate requests, each with its own key.`,
    );
  }
  return undefined;
}

function documentRefusal(
  code: GraphqlGuardRefusalCode,
  message: string,
  nodes?: readonly ASTNode[],
): GraphQLError {
  return new GraphQLError(message, {
    nodes,
    extensions: { code, http: { status: 400 } },
  });
}

/**
 * The guarded field failed before it completed, so nothing of it may be kept: its own error
 * sits at exactly its response key and it has no value, or no field ran at all (a request
 * error, no `data`). A sub-field failing after the mutation returned is not that: the result
 * is stored with its errors, or the retry would run the mutation again.
 */
function failedBeforeCompleting(result: ExecutionResult, responseKey: string): boolean {
  if (!result.errors?.length) return false;
  if (result.data === undefined) return true;
  return (
    result.data?.[responseKey] == null &&
    result.errors.some((error) => error.path?.length === 1 && error.path[0] === responseKey)
  );
}

/**
 * The lost database connection the guarded field failed on, under the GraphQL errors (and any
 * refusal the resolver made of it) wrapping it; undefined when it failed otherwise or not.
 */
function lostConnectionAt(result: ExecutionResult, responseKey: string): unknown {
  if (!failedBeforeCompleting(result, responseKey)) return undefined;
  for (const error of result.errors ?? []) {
    let cause: unknown = error;
    while (isGraphqlError(cause)) cause = cause.originalError;
    if (error.path?.[0] === responseKey && isLostConnection(cause)) return cause;
  }
  return undefined;
}

/** The stored body: the result as sent, and where the guarded field sat in it. */
interface StoredResult {
  data: Record<string, unknown> | null;
  errors?: readonly { message: string; path?: readonly (string | number)[] }[];
  /** Absent in results stored by earlier versions: then taken as the retry's own. */
  responseKey?: string;
}

/** The stored result, with the guarded field under the retry's response key (its alias). */
function replayAs(stored: StoredResult, responseKey: string): ExecutionResult {
  const from = stored.responseKey ?? responseKey;
  const rename = (k: string | number) => (k === from ? responseKey : k);
  const data =
    stored.data && from !== responseKey
      ? Object.fromEntries(Object.entries(stored.data).map(([k, v]) => [rename(k), v]))
      : stored.data;
  const errors = stored.errors?.map((error) =>
    error.path ? { ...error, path: [rename(error.path[0]!), ...error.path.slice(1)] } : error,
  );
  return {
    data,
    ...(errors ? { errors: errors as unknown as ExecutionResult['errors'] } : {}),
    extensions: { idempotency: { replayed: true } },
  };
}

/** Thrown out of the engine so the key is released, while the client still gets its errors. */
class ReleaseWithResult extends Error {}
