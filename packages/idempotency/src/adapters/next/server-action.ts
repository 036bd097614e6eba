import type { Idempotency } from '../../core/engine.ts';
import { IdempotencyError, isIdempotencyError } from '../../core/errors.ts';
import { computeFingerprint, sha256Hex } from '../../core/fingerprint.ts';
import { type JsonExecution, jsonExecution, storedResultOf } from '../../core/json-execution.ts';
import { parseIdempotencyKey } from '../../core/key.ts';
import type { OperationPolicy } from '../../core/types.ts';
import type { IdempotentActionResult } from './action-result.ts';

/** The hidden form field an idempotent form carries its key in (render it once per intent). */
export const IDEMPOTENCY_KEY_FIELD = 'idempotency-key';

/**
 * `exec` inside an idempotent Server Action: the execution, with `complete` taking the action's
 * result, so the stored result commits in the same transaction as your writes.
 */
export type ActionExecution<TTx> = JsonExecution<TTx>;

/** Options of {@link idempotentAction}. */
export interface IdempotentActionOptions<TArgs extends unknown[], TTx> {
  idempotency: Idempotency<TTx>;
  operation: string;
  /** The caller's tenant, from the session (`cookies()`, your auth library): never from the form. */
  getTenantId: () => string | Promise<string>;
  /** Who within the tenant spends the new-key allowance. Default: the tenant. */
  getPrincipal?: () => string | undefined | Promise<string | undefined>;
  /**
   * The key. Default: the `idempotency-key` field when the first argument is a `FormData`,
   * and nothing else: an ordinary string argument (`buy('book-123')`) is never taken for a
   * key. Name any other source here, e.g. `(key) => key` for an action called as `(key, ...)`.
   */
  getKey?: (...args: TArgs) => string | null | undefined;
  /** What must not change under one key. Default: the form's fields without the key, or the other arguments. */
  getFingerprintInput?: (...args: TArgs) => unknown | Promise<unknown>;
  /** Refuse calls without a key. Default true. */
  required?: boolean;
  policy?: OperationPolicy;
}

/**
 * Guards a Next.js Server Action (or any async function) with a durable idempotency key: the
 * first call runs `action`, a retry with the same key and input gets the stored result back
 * (`replayed: true`) without running it, another input under the key is refused (422), and a
 * duplicate while the first still runs is refused (409 with `retryAfterSeconds`).
 *
 * The key comes from the form (a hidden `idempotency-key` field the page renders ONCE per
 * intent, so a double submit or a retry sends the same one) or wherever `getKey` says; the
 * tenant from the caller's session. The result must be JSON.
 *
 * @example
 * 'use server';
 * export const placeOrder = idempotentAction(
 *   async (exec, form: FormData) => db.transaction(async (tx) => {
 *     const order = await insertOrder(tx, String(form.get('sku')));
 *     await exec.complete(tx, order); // stored result commits with the order
 *     return order;
 *   }),
 *   { idempotency, operation: 'orders.place', getTenantId: async () => (await auth()).tenantId },
 * );
 */
export function idempotentAction<TArgs extends unknown[], TResult, TTx = unknown>(
  action: (exec: ActionExecution<TTx>, ...args: TArgs) => Promise<TResult>,
  options: IdempotentActionOptions<TArgs, TTx>,
): (...args: TArgs) => Promise<IdempotentActionResult<TResult>> {
  const { idempotency, operation } = options;
  return async (...args: TArgs) => {
    try {
      const key = parseIdempotencyKey((options.getKey ?? defaultKey)(...args));
      const tenantId = await options.getTenantId();
      if (key === undefined) {
        if (options.required !== false) throw keyMissing(options.getKey !== undefined);
        const exec = idempotency.passthrough({ tenantId, operation });
        return { ok: true, data: await action(jsonExecution(exec), ...args), replayed: false };
      }
      const input = await (options.getFingerprintInput ?? defaultFingerprintInput)(...args);
      let executed: { data: TResult } | undefined;
      const outcome = await idempotency.execute(
        {
          tenantId,
          operation,
          key,
          fingerprint: computeFingerprint(operation, input),
          policy: options.policy,
          principal: await options.getPrincipal?.(),
        },
        async (exec) => {
          const json = jsonExecution(exec);
          const data = await action(json, ...args);
          executed = { data };
          return storedResultOf(json, data);
        },
      );
      if (outcome.kind === 'executed' && executed)
        return { ok: true, ...executed, replayed: false };
      const body = outcome.response.body;
      return {
        ok: true,
        data: (body === null ? undefined : JSON.parse(body)) as TResult,
        replayed: true,
      };
    } catch (error) {
      if (!isIdempotencyError(error)) throw error;
      return {
        ok: false,
        code: error.code,
        status: error.status,
        retryAfterSeconds: error.retryAfterSeconds,
        message: error.message,
      };
    }
  };
}

/** A Server Action has no request headers to fix: the refusal names where its key is read. */
function keyMissing(customKey: boolean): IdempotencyError {
  return new IdempotencyError('idempotency_key_missing', {
    message: customKey
      ? 'An idempotency key is required: getKey gave none for this call'
      : `An idempotency key is required: the form has no "${IDEMPOTENCY_KEY_FIELD}" form field (render it once per intent)`,
  });
}

function defaultKey(...args: unknown[]): string | null | undefined {
  const [first] = args;
  if (!isFormData(first)) return undefined;
  const value = first.get(IDEMPOTENCY_KEY_FIELD);
  return typeof value === 'string' ? value : undefined;
}

/**
 * The form's fields without the key (repeated names as arrays in the order sent; a file as its
 * name, type and the SHA-256 of its contents: two files of one name and size are two inputs).
 * Other arguments go to `computeFingerprint` as they are, which refuses what is not plain JSON
 * data (a Map, a Set, a BigInt) with `idempotency_input_invalid` instead of taking it as `{}`.
 */
async function defaultFingerprintInput(...args: unknown[]): Promise<unknown> {
  const [first, ...rest] = args;
  if (!isFormData(first)) return args;
  const fields: Record<string, unknown[]> = {};
  for (const [name, value] of first.entries()) {
    if (name === IDEMPOTENCY_KEY_FIELD || name.startsWith('$ACTION')) continue;
    const entry =
      typeof value === 'string'
        ? value
        : {
            file: value.name,
            type: value.type,
            sha256: sha256Hex(new Uint8Array(await value.arrayBuffer())),
          };
    const values = fields[name] ?? [];
    values.push(entry);
    fields[name] = values;
  }
  return { form: fields, args: rest };
}

function isFormData(value: unknown): value is FormData {
  return typeof FormData !== 'undefined' && value instanceof FormData;
}
