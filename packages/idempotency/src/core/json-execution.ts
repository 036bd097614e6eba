import { CompletingExecution, type CompletingWith } from './completing-with.ts';
import { IdempotencyError } from './errors.ts';
import type { Execution } from './execution.ts';
import type { StoredResponse } from './types.ts';

/** A JSON body stored as the response an adapter replays. */
export function jsonResponse(status: number, data: unknown): StoredResponse {
  return {
    status,
    headers: { 'content-type': 'application/json' },
    body: data === undefined ? null : JSON.stringify(data),
  };
}

/**
 * An execution whose `complete` takes the handler's result and stores it as JSON: what an
 * adapter whose callers return values (tRPC procedures, Server Actions) hands them.
 */
export interface JsonExecution<TTx> extends CompletingWith<TTx, unknown> {
  /** The underlying execution (for `complete` with a full StoredResponse). */
  readonly execution: Execution<TTx>;
  /**
   * The last value given to `complete` and the response stored for it, so an adapter that
   * returns the same value to the engine reuses the serialisation instead of repeating it.
   */
  readonly completed: { readonly result: unknown; readonly response: StoredResponse } | undefined;
}

/** Wraps `exec` so `complete(tx, result)` stores `result` as a 200 JSON response. */
export function jsonExecution<TTx>(exec: Execution<TTx>): JsonExecution<TTx> {
  return new JsonCompletingExecution(exec);
}

/** `jsonExecution`'s object: it remembers what its `complete` stored (`completed`). */
class JsonCompletingExecution<TTx>
  extends CompletingExecution<TTx, unknown>
  implements JsonExecution<TTx>
{
  readonly execution: Execution<TTx>;
  completed: JsonExecution<TTx>['completed'];

  constructor(exec: Execution<TTx>) {
    super(exec, async (tx: TTx, result: unknown) => {
      const response = jsonResponse(200, result);
      await exec.complete(tx, response);
      this.completed = { result, response };
    });
    this.execution = exec;
  }
}

/**
 * The stored form of a handler's 200 result: the one `complete` already serialised when the
 * handler completed with this very value, else a fresh `jsonResponse`. One JSON.stringify per
 * request instead of two. Called once the handler has RETURNED: a value JSON cannot hold is an
 * `idempotency_result_unstorable`, on which the engine keeps the key instead of releasing it (the
 * handler's commits stand; a retry must not run it again).
 */
export function storedResultOf<TTx>(json: JsonExecution<TTx>, result: unknown): StoredResponse {
  const completed = json.completed;
  if (completed && completed.result === result) return completed.response;
  try {
    return jsonResponse(200, result);
  } catch (error) {
    throw new IdempotencyError('idempotency_result_unstorable', { cause: error });
  }
}
