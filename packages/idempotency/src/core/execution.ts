import { alreadyCompleted, IdempotencyError, LeaseLostError } from './errors.ts';
import type { PhaseResult } from './phases.ts';
import { assertStorable } from './response-size.ts';
import {
  type IdempotencyStore,
  INITIAL_RECOVERY_POINT,
  type KeyIdentity,
  type StoredResponse,
} from './types.ts';

/**
 * One phase of a multi-step operation (Brandur Leach's "atomic phase"; leased mode only):
 * runs inside its own transaction with at most one external side effect, and returns
 * `advanceTo(...)` or `respond(...)`.
 */
export type Phase<TTx> = (tx: TTx, exec: Execution<TTx>) => Promise<PhaseResult>;

/**
 * What an atomic-mode handler gets: it holds nothing, so there is no lease to renew and no
 * recovery point to advance; `complete(tx, response)` inserts the key already completed
 * inside the handler's ONE transaction. Calling `advance` or `runPhases` on it does not
 * compile.
 */
export interface AtomicExecution<TTx> {
  readonly active: boolean;
  readonly tenantId: string;
  readonly operation: string;
  readonly key: string | undefined;
  /** Aborted when the attempt lost its key (never, in atomic mode). */
  readonly signal: AbortSignal;
  complete(tx: TTx, response: StoredResponse): Promise<void>;
}

/**
 * What a handler gets while it holds a key in leased mode (or a passthrough when no key was
 * sent and none is required): everything of `AtomicExecution` plus recovery points and the
 * lease. All writes are guarded by this attempt's owner token.
 */
export interface Execution<TTx> extends AtomicExecution<TTx> {
  readonly recoveryPoint: string;
  readonly recoveryData: unknown;
  readonly resumed: boolean;
  advance(tx: TTx, recoveryPoint: string, data?: unknown): Promise<void>;
  /** Extend this attempt's lease now (the heartbeat does it on its own by default). */
  renew(): Promise<void>;
  runPhases(phases: Record<string, Phase<TTx>>): Promise<StoredResponse>;
}

interface HeldExecutionInit<TTx> {
  store: IdempotencyStore<TTx>;
  id: KeyIdentity;
  ownerToken: string;
  recoveryPoint: string;
  recoveryData: unknown;
  resumed: boolean;
  ttlMs: number;
  leaseMs: number;
  maxResponseBytes: number;
  onLeaseLost: () => void;
}

/** The execution of an attempt that owns a key. Internal: handlers see `Execution`. */
export class HeldExecution<TTx> implements Execution<TTx> {
  readonly active = true;
  readonly tenantId: string;
  readonly operation: string;
  readonly key: string;
  readonly resumed: boolean;
  recoveryPoint: string;
  recoveryData: unknown;
  /** Set once any phase of this key is known (or possibly) committed: the key must not be released. */
  phaseCommitted: boolean;
  /** Set when `complete(tx, ...)` succeeded inside a caller's transaction (which may still roll back). */
  completedInCallerTx = false;
  /** The transaction of that completion: a retried transaction is another one. */
  #completedIn: TTx | undefined;
  readonly #abort = new AbortController();
  readonly signal = this.#abort.signal;
  #lost: LeaseLostError | undefined;
  readonly #init: HeldExecutionInit<TTx>;

  constructor(init: HeldExecutionInit<TTx>) {
    this.#init = init;
    this.tenantId = init.id.tenantId;
    this.operation = init.id.operation;
    this.key = init.id.key;
    this.recoveryPoint = init.recoveryPoint;
    this.recoveryData = init.recoveryData;
    this.resumed = init.resumed;
    this.phaseCommitted = init.recoveryPoint !== INITIAL_RECOVERY_POINT;
  }

  get ownerToken(): string {
    return this.#init.ownerToken;
  }

  get leaseLost(): boolean {
    return this.#lost !== undefined;
  }

  /** Record that this attempt no longer owns the key, wake anything listening on `signal`. */
  markLeaseLost(): LeaseLostError {
    const error = new LeaseLostError();
    if (!this.#lost) {
      this.#lost = error;
      this.#abort.abort(error);
      this.#init.onLeaseLost();
    }
    return error;
  }

  async complete(tx: TTx, response: StoredResponse): Promise<void> {
    // Again in the same transaction: the statement would find the key completed and read as a
    // lost lease. Nothing is written; if the error rolls the transaction back, the key is free.
    if (this.completedInCallerTx && tx === this.#completedIn)
      throw alreadyCompleted(this.operation);
    assertInTransaction(this.#init.store, tx, this.operation);
    assertStorable(response, this.#init.maxResponseBytes);
    const result = await this.#init.store.complete(
      tx,
      this.#init.id,
      this.ownerToken,
      response,
      this.#init.ttlMs,
    );
    if (result === 'lost') {
      // An earlier transaction of this attempt completed the key and committed: it stands.
      if (
        this.completedInCallerTx &&
        (await this.#init.store.isCompletedBy(this.#init.id, this.ownerToken))
      )
        throw alreadyCompleted(this.operation);
      throw this.markLeaseLost();
    }
    this.completedInCallerTx = true;
    this.#completedIn = tx;
  }

  async advance(tx: TTx, recoveryPoint: string, data: unknown = null): Promise<void> {
    assertInTransaction(this.#init.store, tx, this.operation, 'advance');
    const result = await this.#init.store.advance(
      tx,
      this.#init.id,
      this.ownerToken,
      recoveryPoint,
      data,
    );
    if (result === 'lost') throw this.markLeaseLost();
    // Conservative: once a phase may have committed, failure handling never releases the key.
    this.phaseCommitted = true;
    this.recoveryPoint = recoveryPoint;
    this.recoveryData = data;
  }

  async renew(): Promise<void> {
    const result = await this.#init.store.renew(this.#init.id, this.ownerToken, this.#init.leaseMs);
    if (result === 'lost') throw this.markLeaseLost();
  }

  async runPhases(phases: Record<string, Phase<TTx>>): Promise<StoredResponse> {
    for (;;) {
      const phase = phases[this.recoveryPoint];
      if (!phase)
        throw new Error(`No phase for recovery point "${this.recoveryPoint}" of ${this.operation}`);
      if (this.leaseLost) throw new LeaseLostError();
      const result = await this.#init.store.transaction(async (tx) => {
        const outcome = await phase(tx, this);
        if (outcome.kind === 'respond') {
          await this.complete(tx, outcome.response);
        } else {
          const write = await this.#init.store.advance(
            tx,
            this.#init.id,
            this.ownerToken,
            outcome.recoveryPoint,
            outcome.data,
          );
          if (write === 'lost') throw this.markLeaseLost();
        }
        return outcome;
      });
      if (result.kind === 'respond') return result.response;
      this.phaseCommitted = true;
      this.recoveryPoint = result.recoveryPoint;
      this.recoveryData = result.data;
    }
  }
}

/**
 * Execution for a request without a key where none is required: nothing is stored, phases
 * simply run one after another, each in its own transaction.
 */
export class PassthroughExecution<TTx> implements Execution<TTx> {
  readonly active = false;
  readonly key = undefined;
  readonly resumed = false;
  readonly signal = new AbortController().signal;
  recoveryPoint = INITIAL_RECOVERY_POINT;
  recoveryData: unknown = null;

  constructor(
    private readonly store: IdempotencyStore<TTx>,
    readonly tenantId: string,
    readonly operation: string,
  ) {}

  async complete(): Promise<void> {}

  async advance(_tx: TTx, recoveryPoint: string, data: unknown = null): Promise<void> {
    this.recoveryPoint = recoveryPoint;
    this.recoveryData = data;
  }

  async renew(): Promise<void> {}

  async runPhases(phases: Record<string, Phase<TTx>>): Promise<StoredResponse> {
    for (;;) {
      const phase = phases[this.recoveryPoint];
      if (!phase)
        throw new Error(`No phase for recovery point "${this.recoveryPoint}" of ${this.operation}`);
      const result = await this.store.transaction((tx) => phase(tx, this));
      if (result.kind === 'respond') return result.response;
      this.recoveryPoint = result.recoveryPoint;
      this.recoveryData = result.data;
    }
  }
}

/**
 * Refuse a `complete` or `advance` given the database instead of a transaction (where the store
 * can tell): it would commit the key on its own, whatever becomes of the business transaction.
 */
export function assertInTransaction<TTx>(
  store: IdempotencyStore<TTx>,
  tx: TTx,
  operation: string,
  method: 'complete' | 'advance' = 'complete',
): void {
  if (store.isTransaction && !store.isTransaction(tx))
    throw new IdempotencyError('idempotency_complete_outside_transaction', {
      message: `exec.${method} for "${operation}" was given the database, not the transaction of the business writes: pass the tx your db.transaction callback received`,
    });
}
