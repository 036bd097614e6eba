import { alreadyCompleted, IdempotencyError } from './errors.ts';
import { assertInTransaction, type Execution, type Phase } from './execution.ts';
import { assertStorable } from './response-size.ts';
import {
  type IdempotencyStore,
  INITIAL_RECOVERY_POINT,
  type KeyIdentity,
  type StoredResponse,
} from './types.ts';

/** Retry-After for a duplicate that waited past `lock_timeout` on the first one's transaction. */
export const ATOMIC_LOCK_TIMEOUT_RETRY_AFTER_SECONDS = 1;

interface AtomicExecutionInit<TTx> {
  store: IdempotencyStore<TTx>;
  id: KeyIdentity;
  fingerprint: string;
  ttlMs: number;
  tombstoneMs: number;
  maxResponseBytes: number;
  /**
   * Under `waitForResult`, the wait's bound (a `performance.now()` time): the insert waits for a
   * duplicate's uncommitted key until then (then 409), instead of the connection's
   * `lock_timeout`. When that transaction commits, this one rolls back and replays it; when it
   * rolls back, this one runs.
   */
  waitDeadline?: number;
}

/** Never aborted: an atomic attempt holds no lease that could be lost. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * The execution of an atomic-mode attempt: it holds nothing. `complete(tx, ...)` inserts the key
 * already completed inside the caller's transaction; the primary key picks one winner among
 * racing duplicates. No recovery points: an atomic handler is one transaction by definition.
 * Internal: a request that names atomic mode types its handler's execution `AtomicExecution`
 * (the phase methods do not compile); where configuration picks atomic mode the handler is
 * typed `Execution`, and the phase methods refuse at run time with what to change.
 */
export class AtomicKeyExecution<TTx> implements Execution<TTx> {
  readonly active = true;
  readonly tenantId: string;
  readonly operation: string;
  readonly key: string;
  readonly signal = NEVER_ABORTED;
  /** How the last `complete` ended; the engine reads it whatever error the handler surfaces. */
  completion: 'none' | 'inserted' | 'conflict' | 'lock_timeout' = 'none';
  readonly #init: AtomicExecutionInit<TTx>;
  /** The transaction of the last `complete`: a retried transaction is another one. */
  #completedIn: TTx | undefined;

  constructor(init: AtomicExecutionInit<TTx>) {
    this.#init = init;
    this.tenantId = init.id.tenantId;
    this.operation = init.id.operation;
    this.key = init.id.key;
  }

  async complete(tx: TTx, response: StoredResponse): Promise<void> {
    if (this.completion === 'inserted' && tx === this.#completedIn) {
      // A second insert would meet our own row and report a conflict, rolling back our own work.
      throw alreadyCompleted(this.operation);
    }
    assertInTransaction(this.#init.store, tx, this.operation);
    // In ANOTHER transaction it is the caller running its transaction again after the server
    // rolled the first back (serialization failure 40001, deadlock 40P01): that insert is gone.
    // Had the first committed, this insert meets it and answers `conflict` (a replay of it).
    assertStorable(response, this.#init.maxResponseBytes);
    const { id, waitDeadline } = this.#init;
    // The identity's fields are listed, not spread: V8 builds a spread object on a slow path
    // that `npm run bench -- --only guard-cpu` resolves, on every guarded request.
    const result = await this.#init.store.insertCompleted(tx, {
      tenantId: id.tenantId,
      operation: id.operation,
      key: id.key,
      fingerprint: this.#init.fingerprint,
      response,
      ttlMs: this.#init.ttlMs,
      tombstoneMs: this.#init.tombstoneMs,
      lockWaitMs:
        waitDeadline === undefined
          ? undefined
          : Math.max(1, Math.ceil(waitDeadline - performance.now())),
    });
    // What the insert answered, for the engine (`completion`) and for the handler (a throw).
    this.completion = result;
    this.#completedIn = tx;
    // Propagates so the caller's transaction rolls back; the engine then answers from the winner.
    if (result === 'conflict') throw new IdempotencyError('idempotency_key_conflict');
    if (result === 'lock_timeout') {
      throw new IdempotencyError('idempotency_key_in_use', {
        retryAfterSeconds: ATOMIC_LOCK_TIMEOUT_RETRY_AFTER_SECONDS,
      });
    }
  }

  // What `Execution` has beyond `AtomicExecution`: an atomic attempt's fixed answers.
  get recoveryPoint(): string {
    return INITIAL_RECOVERY_POINT;
  }
  get recoveryData(): null {
    return null;
  }
  get resumed(): boolean {
    return false;
  }
  advance(): Promise<void> {
    return this.#refuse('recovery points to advance');
  }
  async renew(): Promise<void> {}
  runPhases(_phases: Record<string, Phase<TTx>>): Promise<StoredResponse> {
    return this.#refuse('phases to run');
  }
  #refuse(what: string): Promise<never> {
    return Promise.reject(
      new Error(
        `${this.operation} runs in atomic mode, which has no ${what}: use mode 'leased' for recovery points`,
      ),
    );
  }
}
