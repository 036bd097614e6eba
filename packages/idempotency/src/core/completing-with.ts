import type { Execution } from './execution.ts';

/**
 * An `Execution` whose `complete` takes what the adapter's handlers produce (a JSON value, a
 * `Response`) instead of a `StoredResponse`.
 */
export interface CompletingWith<TTx, TResult> extends Omit<Execution<TTx>, 'complete'> {
  complete(tx: TTx, result: TResult): Promise<void>;
}

/**
 * `exec` with `complete` replaced; everything else reads through to `exec` at call time (its
 * `active` and `signal` change while the attempt runs, so nothing is copied). Adapters build
 * their handler's execution with it: one delegation for all of them.
 */
export function completingWith<TTx, TResult>(
  exec: Execution<TTx>,
  complete: (tx: TTx, result: TResult) => Promise<void>,
): CompletingWith<TTx, TResult> {
  return new CompletingExecution(exec, complete);
}

/**
 * The delegation: every getter reads the wrapped execution. The phase methods are made when
 * read, bound, so a handler may destructure them.
 */
export class CompletingExecution<TTx, TResult> implements CompletingWith<TTx, TResult> {
  readonly #exec: Execution<TTx>;
  readonly complete: (tx: TTx, result: TResult) => Promise<void>;

  constructor(exec: Execution<TTx>, complete: (tx: TTx, result: TResult) => Promise<void>) {
    this.#exec = exec;
    this.complete = complete;
  }

  get active() {
    return this.#exec.active;
  }
  get tenantId() {
    return this.#exec.tenantId;
  }
  get operation() {
    return this.#exec.operation;
  }
  get key() {
    return this.#exec.key;
  }
  get recoveryPoint() {
    return this.#exec.recoveryPoint;
  }
  get recoveryData() {
    return this.#exec.recoveryData;
  }
  get resumed() {
    return this.#exec.resumed;
  }
  get signal() {
    return this.#exec.signal;
  }
  get advance(): Execution<TTx>['advance'] {
    const exec = this.#exec;
    return (tx, recoveryPoint, data) => exec.advance(tx, recoveryPoint, data);
  }
  get renew(): Execution<TTx>['renew'] {
    const exec = this.#exec;
    return () => exec.renew();
  }
  get runPhases(): Execution<TTx>['runPhases'] {
    const exec = this.#exec;
    return (phases) => exec.runPhases(phases);
  }
}
