import { type CompletingWith, completingWith } from './completing-with.ts';
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
}

/**
 * Wraps `exec` so `complete(tx, result)` stores `result` as a 200 JSON response.
 *
 * @example
 * await jsonExecution(exec).complete(tx, { id: 'ord_1' });
 */
export function jsonExecution<TTx>(exec: Execution<TTx>): JsonExecution<TTx> {
  const json = completingWith(exec, (tx: TTx, result: unknown) =>
    exec.complete(tx, jsonResponse(200, result)),
  );
  return Object.assign(json, { execution: exec });
}
