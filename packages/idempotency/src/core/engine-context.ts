import { watchCommits } from './commit-outcome.ts';
import { decideForExistingKey } from './decision.ts';
import { IdempotencyError, isIdempotencyError } from './errors.ts';
import type {
  IdempotencyEvent,
  IdempotencyEventType,
  IdempotencyStore,
  KeyIdentity,
  KeyRecord,
  OperationPolicy,
  StoredResponse,
  WaitForResultPolicy,
} from './types.ts';
import { createKeyWakeups, waitWhileHeld } from './wait-for-result.ts';
import { withTimeout } from './with-timeout.ts';

/** Retry-After of a 503 when the store failed or timed out (fail closed). */
export const STORE_UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/** Options of `createIdempotency`. */
export interface IdempotencyOptions<TTx> {
  store: IdempotencyStore<TTx>;
  defaults?: OperationPolicy;
  operations?: Record<string, OperationPolicy>;
  storeTimeoutMs?: number;
  maxResponseBytes?: number;
  rateLimit?: { maxNewKeys: number; windowMs: number };
  onEvent?: (event: IdempotencyEvent) => void;
  /**
   * How many COMMITs the database acknowledged without their synchronous standby so far
   * (`createCommitNoticeWatch().unreplicatedCommits`). A request that completed its key while
   * it moved is answered `idempotency_outcome_unknown` (409), never its 2xx.
   */
  unreplicatedCommits?: () => number;
}

/** One guarded request: who, which operation, which key, and the request's fingerprint. */
export interface ExecuteRequest {
  tenantId: string;
  operation: string;
  key: string;
  fingerprint: string;
  policy?: OperationPolicy;
  /**
   * Who within the tenant spends the new-key allowance of `rateLimit` (a session, an API key),
   * so one caller cannot use up everybody's. Default '': the tenant as a whole.
   */
  principal?: string;
}

/** Either the handler ran now, or a stored response is being replayed. */
export type ExecuteOutcome =
  | { kind: 'executed'; response: StoredResponse }
  | { kind: 'replayed'; response: StoredResponse };

/**
 * What the leased and the atomic engine share: the store, the one store-call wrapper, the
 * event hook and the answers for a key this attempt may not run. Internal.
 */
export type EngineContext<TTx> = ReturnType<typeof createEngineContext<TTx>>;

/**
 * The wait of one request under `waitForResult`: its bound (a `performance.now()` time), set
 * once so that several rounds (a waiter that took a released key over and lost it again) share it.
 */
export interface Waiting {
  policy: WaitForResultPolicy;
  deadline: number;
}

/** The request's wait, if its policy asks for one. */
export function waitingFor(policy: Required<OperationPolicy>): Waiting | undefined {
  const wait = policy.waitForResult;
  return wait ? { policy: wait, deadline: performance.now() + wait.timeoutMs } : undefined;
}

export function createEngineContext<TTx>(options: IdempotencyOptions<TTx>) {
  const { store, onEvent } = options;
  const storeTimeoutMs = options.storeTimeoutMs ?? 2_000;
  const unreplicatedCommits = options.unreplicatedCommits ?? (() => 0);
  function emit(event: IdempotencyEvent): void {
    try {
      onEvent?.(event);
    } catch {
      // Observability must never change the outcome of a request.
    }
  }

  /** `emit` of a key's event, with `durationMs` when given; nothing is built without `onEvent`. */
  function emitKeyEvent(type: IdempotencyEventType, id: KeyIdentity, durationMs?: number): void {
    if (!onEvent) return;
    const event: IdempotencyEvent = { type, tenantId: id.tenantId, operation: id.operation };
    emit(durationMs === undefined ? event : { ...event, durationMs });
  }

  /**
   * Every store call goes through here: bounded by the store timeout, a failure reported as a
   * `store_error` event (an unreadable stored answer as `answer_unreadable`). `failClosed`
   * turns the failure into 503 (nothing executed), unless it is already an `IdempotencyError`;
   * `onLateSuccess` undoes a call that succeeded after the timeout already answered.
   */
  async function callStore<T>(
    label: string,
    id: KeyIdentity,
    call: () => Promise<T>,
    options: { failClosed?: boolean; onLateSuccess?: (value: T) => void } = {},
  ): Promise<T> {
    const started = performance.now();
    try {
      return await withTimeout(call(), storeTimeoutMs, options.onLateSuccess);
    } catch (error) {
      // A store's own refusal (an answer it cannot decrypt) keeps its code: it is no outage,
      // so it is reported as what it is and no store-outage alert pages for it.
      if (isIdempotencyError(error, 'idempotency_answer_unreadable')) {
        emitKeyEvent('answer_unreadable', id);
        throw error;
      }
      emit({
        type: 'store_error',
        tenantId: id.tenantId,
        operation: id.operation,
        durationMs: performance.now() - started,
        error: { label, error },
      });
      if (!options.failClosed || isIdempotencyError(error)) throw error;
      throw new IdempotencyError('idempotency_store_unavailable', {
        retryAfterSeconds: STORE_UNAVAILABLE_RETRY_AFTER_SECONDS,
        cause: error,
      });
    }
  }

  /** A row this attempt may not run on: replay it, or throw the refusal it calls for. */
  function answerExisting(id: KeyIdentity, record: KeyRecord, fingerprint: string): ExecuteOutcome {
    const decision = decideForExistingKey(record, fingerprint);
    switch (decision.kind) {
      case 'replay':
        emitKeyEvent('replayed', id);
        // A completed record always carries a response (CHECK constraint in the table).
        return { kind: 'replayed', response: record.response as StoredResponse };
      case 'reused':
        emitKeyEvent('reused', id);
        throw new IdempotencyError('idempotency_key_reused');
      case 'in_use':
        emitKeyEvent('in_use', id);
        throw new IdempotencyError('idempotency_key_in_use', {
          retryAfterSeconds: decision.retryAfterSeconds,
        });
      case 'unknown':
        emitKeyEvent('unknown', id);
        throw new IdempotencyError('idempotency_outcome_unknown', {
          retryAfterSeconds: decision.retryAfterSeconds,
        });
      case 'expired':
        emitKeyEvent('expired', id);
        throw new IdempotencyError('idempotency_key_expired');
    }
  }

  /** Duplicates waiting in this process for keys to settle; engines wake them when they finish. */
  const wakeups = createKeyWakeups();

  /**
   * `answerExisting`, but a key another attempt still holds is first waited for while
   * `waiting` allows (`waitForResult`): then the answer is what the key settled to, or `'free'`
   * when nobody holds it any more and the caller should try again (as a retry would).
   */
  async function answerExistingOrWait(
    id: KeyIdentity,
    record: KeyRecord,
    fingerprint: string,
    waiting: Waiting | undefined,
    takesOverExpiredLeases: boolean,
  ): Promise<ExecuteOutcome | 'free'> {
    if (!waiting || decideForExistingKey(record, fingerprint).kind !== 'in_use')
      return answerExisting(id, record, fingerprint);
    const started = performance.now();
    const end = await waitWhileHeld({
      id,
      fingerprint,
      deadline: waiting.deadline,
      wait: waiting.policy,
      takesOverExpiredLeases,
      last: record,
      lookup: () => callStore('lookup', id, () => store.lookup(id), { failClosed: true }),
      wakeups,
    });
    emitKeyEvent('waited', id, performance.now() - started);
    if (end.kind === 'free') return 'free';
    return answerExisting(id, end.record, fingerprint);
  }

  /** The principal is over its new-key allowance: report it and return the refusal to throw. */
  function refuseRateLimited(id: KeyIdentity, retryAfterSeconds: number): IdempotencyError {
    emitKeyEvent('rate_limited', id);
    return new IdempotencyError('idempotency_rate_limited', { retryAfterSeconds });
  }

  return {
    store,
    maxResponseBytes: options.maxResponseBytes ?? 256 * 1024,
    rateLimit: options.rateLimit,
    emit,
    emitKeyEvent,
    /** Watch the COMMIT of the request about to run (`IdempotencyOptions.unreplicatedCommits`). */
    watchCommits: () => watchCommits(unreplicatedCommits),
    callStore,
    answerExisting,
    answerExistingOrWait,
    wakeups,
    refuseRateLimited,
  };
}
