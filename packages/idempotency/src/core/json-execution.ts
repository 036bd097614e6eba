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
export interface JsonExecution<TTx> extends Omit<Execution<TTx>, 'complete'> {
  /** Store `result` as the response, inside your transaction `tx` (throws LeaseLostError -> tx rolls back). */
  complete(tx: TTx, result: unknown): Promise<void>;
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
  return {
    get active() {
      return exec.active;
    },
    get tenantId() {
      return exec.tenantId;
    },
    get operation() {
      return exec.operation;
    },
    get key() {
      return exec.key;
    },
    get recoveryPoint() {
      return exec.recoveryPoint;
    },
    get recoveryData() {
      return exec.recoveryData;
    },
    get resumed() {
      return exec.resumed;
    },
    get signal() {
      return exec.signal;
    },
    execution: exec,
    complete: (tx, result) => exec.complete(tx, jsonResponse(200, result)),
    advance: (tx, recoveryPoint, data) => exec.advance(tx, recoveryPoint, data),
    renew: () => exec.renew(),
    runPhases: (phases) => exec.runPhases(phases),
  };
}
