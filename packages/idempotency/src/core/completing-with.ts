import type { Execution } from './execution.ts';

/**
 * An `Execution` whose `complete` takes what the adapter's handlers produce (a JSON value, a
 * `Response`) instead of a `StoredResponse`.
 *
 * @example
 * const exec: CompletingWith<Tx, Response> = completingWith(held, async (tx, r) => held.complete(tx, await storedResponseFrom(r)));
 */
export interface CompletingWith<TTx, TResult> extends Omit<Execution<TTx>, 'complete'> {
  complete(tx: TTx, result: TResult): Promise<void>;
}

/**
 * `exec` with `complete` replaced; everything else reads through to `exec` at call time (its
 * `active` and `signal` change while the attempt runs, so nothing is copied). Adapters build
 * their handler's execution with it: one delegation for all of them.
 *
 * @example
 * const json = completingWith(exec, (tx, result: unknown) => exec.complete(tx, jsonResponse(200, result)));
 */
export function completingWith<TTx, TResult>(
  exec: Execution<TTx>,
  complete: (tx: TTx, result: TResult) => Promise<void>,
): CompletingWith<TTx, TResult> {
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
    complete,
    advance: (tx, recoveryPoint, data) => exec.advance(tx, recoveryPoint, data),
    renew: () => exec.renew(),
    runPhases: (phases) => exec.runPhases(phases),
  };
}
