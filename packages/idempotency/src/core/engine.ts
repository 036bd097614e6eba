import { randomUUID } from 'node:crypto';
import { ATOMIC_LOCK_TIMEOUT_RETRY_AFTER_SECONDS, AtomicExecution } from './atomic-execution.ts';
import { decideForExistingKey, UNKNOWN_RETRY_AFTER_SECONDS } from './decision.ts';
import {
  AmbiguousOutcomeError,
  AtomicCompletionMissingError,
  IdempotencyError,
  isIdempotencyError,
  LeaseLostError,
} from './errors.ts';
import { type Execution, HeldExecution, PassthroughExecution } from './execution.ts';
import { createHeartbeatScheduler } from './heartbeat.ts';
import { assertStorable } from './response-size.ts';
import type {
  IdempotencyEvent,
  IdempotencyEventType,
  IdempotencyStore,
  KeyIdentity,
  KeyRecord,
  OperationPolicy,
  ReserveResult,
  StoredResponse,
} from './types.ts';
import { withTimeout } from './with-timeout.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
const STORE_UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * Options of `createIdempotency`.
 *
 * @example
 * const options: IdempotencyOptions<Tx> = { store: createDrizzleStore(db), storeTimeoutMs: 1_000 };
 */
export interface IdempotencyOptions<TTx> {
  store: IdempotencyStore<TTx>;
  defaults?: OperationPolicy;
  operations?: Record<string, OperationPolicy>;
  storeTimeoutMs?: number;
  maxResponseBytes?: number;
  rateLimit?: { maxNewKeys: number; windowMs: number };
  onEvent?: (event: IdempotencyEvent) => void;
}

/**
 * One guarded request: who, which operation, which key, and the request's fingerprint.
 *
 * @example
 * const request: ExecuteRequest = { tenantId, operation: 'checkout.pay', key, fingerprint: computeFingerprint('checkout.pay', input) };
 */
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

/**
 * Either the handler ran now, or a stored response is being replayed.
 *
 * @example
 * if (outcome.kind === 'replayed') headers.set('Idempotent-Replayed', 'true');
 */
export type ExecuteOutcome =
  | { kind: 'executed'; response: StoredResponse }
  | { kind: 'replayed'; response: StoredResponse };

/**
 * The engine adapters call. See `createIdempotency`.
 *
 * @example
 * const idempotency: Idempotency<Tx> = createIdempotency({ store: createDrizzleStore(db) });
 */
export interface Idempotency<TTx> {
  execute(
    request: ExecuteRequest,
    handler: (exec: Execution<TTx>) => Promise<StoredResponse>,
  ): Promise<ExecuteOutcome>;
  passthrough(request: { tenantId: string; operation: string }): Execution<TTx>;
  /** Resolved policy for an operation (defaults < operations[name] < override). */
  policyFor(operation: string, override?: OperationPolicy): Required<OperationPolicy>;
  /** Emit an event through the configured hook (adapters use it; never throws). */
  emit(event: IdempotencyEvent): void;
}

/**
 * Create the idempotency engine over a store.
 *
 * `execute` reserves the key with one atomic statement and then either runs the handler (this
 * attempt owns the key), replays the stored response, or throws an `IdempotencyError` with a
 * stable code. A store failure or timeout fails closed: 503, handler not run.
 *
 * @example
 * const idempotency = createIdempotency({
 *   store: createDrizzleStore(db),
 *   operations: { 'checkout.pay': { ttlMs: 24 * 3600_000, leaseMs: 30_000 } },
 *   rateLimit: { maxNewKeys: 1000, windowMs: 60_000 },
 * });
 * const outcome = await idempotency.execute(
 *   { tenantId, operation: 'checkout.pay', key, fingerprint: computeFingerprint('checkout.pay', input) },
 *   async (exec) => ({ status: 200, headers: {}, body: '{"ok":true}' }),
 * );
 */
export function createIdempotency<TTx>(options: IdempotencyOptions<TTx>): Idempotency<TTx> {
  const { store } = options;
  const storeTimeoutMs = options.storeTimeoutMs ?? 2_000;
  const maxResponseBytes = options.maxResponseBytes ?? 256 * 1024;
  const heartbeats = createHeartbeatScheduler();

  function emit(event: IdempotencyEvent): void {
    try {
      options.onEvent?.(event);
    } catch {
      // Observability must never change the outcome of a request.
    }
  }

  function policyFor(operation: string, override?: OperationPolicy): Required<OperationPolicy> {
    const merged = { ...options.defaults, ...options.operations?.[operation], ...override };
    return {
      ttlMs: merged.ttlMs ?? DAY_MS,
      leaseMs: merged.leaseMs ?? 30_000,
      onExpiredLease: merged.onExpiredLease ?? 'resume',
      heartbeat: merged.heartbeat ?? true,
      rateLimited: merged.rateLimited ?? true,
      mode: merged.mode ?? 'leased',
    };
  }

  /** Wrap a store call: bounded, and any failure reported as a store error. */
  async function guarded<T>(label: string, id: KeyIdentity, call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await withTimeout(call(), storeTimeoutMs);
    } catch (error) {
      emit({
        ...eventBase('store_error', id),
        durationMs: performance.now() - started,
        error: { label, error },
      });
      throw error;
    }
  }

  function reserve(
    id: KeyIdentity,
    fingerprint: string,
    ownerToken: string,
    policy: Required<OperationPolicy>,
    principal: string,
  ): Promise<ReserveResult> {
    return storeOr503(
      id,
      () =>
        store.reserve({
          ...id,
          fingerprint,
          ownerToken,
          leaseMs: policy.leaseMs,
          ttlMs: policy.ttlMs,
          onExpiredLease: policy.onExpiredLease,
          principal,
          rateLimit: policy.rateLimited ? options.rateLimit : undefined,
        }),
      (late) => {
        // The reservation landed after we answered 503: give the key back so a retry runs.
        if (late.kind === 'acquired') store.release(id, ownerToken).catch(() => {});
      },
    );
  }

  async function execute(
    request: ExecuteRequest,
    handler: (exec: Execution<TTx>) => Promise<StoredResponse>,
  ): Promise<ExecuteOutcome> {
    const policy = policyFor(request.operation, request.policy);
    if (policy.mode === 'atomic') return executeAtomic(request, policy, handler);
    const id = identity(request);
    const ownerToken = randomUUID();
    const reservation = await reserve(
      id,
      request.fingerprint,
      ownerToken,
      policy,
      request.principal ?? '',
    );

    if (reservation.kind === 'rate_limited')
      throw refuseRateLimited(id, reservation.retryAfterSeconds);
    if (reservation.kind === 'existing')
      return answerExisting(id, reservation.record, request.fingerprint);

    emit(eventBase(reservation.takenOver ? 'lease_taken_over' : 'created', id));
    const exec = new HeldExecution<TTx>({
      store,
      id,
      ownerToken,
      recoveryPoint: reservation.record.recoveryPoint,
      recoveryData: reservation.record.recoveryData,
      resumed: reservation.takenOver,
      ttlMs: policy.ttlMs,
      leaseMs: policy.leaseMs,
      maxResponseBytes,
      onLeaseLost: () => emit(eventBase('lease_lost', id)),
    });
    const heartbeat = policy.heartbeat
      ? heartbeats.start({
          intervalMs: Math.max(50, Math.floor(policy.leaseMs / 3)),
          renew: () => guarded('renew', id, () => store.renew(id, ownerToken, policy.leaseMs)),
          onLost: () => exec.markLeaseLost(),
        })
      : undefined;

    const handlerStarted = performance.now();
    let response: StoredResponse;
    try {
      response = await handler(exec);
    } catch (error) {
      await heartbeat?.stop();
      throw await settleFailure(exec, policy, error);
    }
    await heartbeat?.stop();

    // 5xx is never stored: it says "the server failed", and the client should be able to retry.
    if (response.status >= 500 && !exec.completedInCallerTx) {
      await settleFailure(exec, policy, undefined);
      return { kind: 'executed', response };
    }
    await finishCompletion(exec, response, policy);
    emit({ ...eventBase('completed', id), durationMs: performance.now() - handlerStarted });
    return { kind: 'executed', response };
  }

  /** A row this attempt may not run on: replay it, or throw the refusal it calls for. */
  function answerExisting(id: KeyIdentity, record: KeyRecord, fingerprint: string): ExecuteOutcome {
    const decision = decideForExistingKey(record, fingerprint);
    switch (decision.kind) {
      case 'replay':
        emit(eventBase('replayed', id));
        // A completed record always carries a response (CHECK constraint in the table).
        return { kind: 'replayed', response: record.response as StoredResponse };
      case 'reused':
        emit(eventBase('reused', id));
        throw new IdempotencyError('idempotency_key_reused');
      case 'in_use':
        emit(eventBase('in_use', id));
        throw new IdempotencyError('idempotency_key_in_use', {
          retryAfterSeconds: decision.retryAfterSeconds,
        });
      case 'unknown':
        emit(eventBase('unknown', id));
        throw new IdempotencyError('idempotency_outcome_unknown', {
          retryAfterSeconds: decision.retryAfterSeconds,
        });
    }
  }

  /** The principal is over its new-key allowance: report it and return the refusal to throw. */
  function refuseRateLimited(id: KeyIdentity, retryAfterSeconds: number): IdempotencyError {
    emit(eventBase('rate_limited', id));
    return new IdempotencyError('idempotency_rate_limited', { retryAfterSeconds });
  }

  /**
   * A store call outside any caller transaction whose failure means 503 (fail closed).
   * `onLateSuccess` undoes a call that succeeded after the timeout already answered 503.
   */
  async function storeOr503<T>(
    id: KeyIdentity,
    call: () => Promise<T>,
    onLateSuccess?: (value: T) => void,
  ): Promise<T> {
    const started = performance.now();
    try {
      return await withTimeout(call(), storeTimeoutMs, onLateSuccess);
    } catch (error) {
      emit({ ...eventBase('store_error', id), durationMs: performance.now() - started, error });
      throw new IdempotencyError('idempotency_store_unavailable', {
        retryAfterSeconds: STORE_UNAVAILABLE_RETRY_AFTER_SECONDS,
        cause: error,
      });
    }
  }

  /**
   * Atomic mode (docs/decisions/0007-atomic-mode.md): one read before the handler, the key
   * inserted completed inside the handler's transaction. The read only saves work for retries
   * of finished keys; the primary key inside the business transaction is what decides.
   */
  async function executeAtomic(
    request: ExecuteRequest,
    policy: Required<OperationPolicy>,
    handler: (exec: Execution<TTx>) => Promise<StoredResponse>,
  ): Promise<ExecuteOutcome> {
    const id = identity(request);
    const found = await storeOr503(id, () => store.lookup(id));
    if (found && !(found.writable && canOverwrite(found.record, request.fingerprint))) {
      return answerExisting(id, found.record, request.fingerprint);
    }
    // The allowance is checked before the handler but spent only by a key this request
    // stored (after its transaction committed): refused input, failures and concurrent
    // duplicates that lose the primary-key race never spend it. Concurrent new keys of one
    // principal may overshoot the cap by at most their number in flight.
    const limit = policy.rateLimited ? options.rateLimit : undefined;
    const scope = { tenantId: id.tenantId, principal: request.principal ?? '' };
    if (limit && !found) {
      const peeked = await storeOr503(id, () => store.peekNewKeys(scope, limit));
      if (peeked.limited) throw refuseRateLimited(id, peeked.retryAfterSeconds);
    }

    const exec = new AtomicExecution<TTx>({
      store,
      id,
      fingerprint: request.fingerprint,
      ttlMs: policy.ttlMs,
      maxResponseBytes,
    });
    const handlerStarted = performance.now();
    let response: StoredResponse;
    try {
      response = await handler(exec);
    } catch (error) {
      // Whatever wrapped it (tRPC, the caller's own error handling), the execution knows.
      if (exec.completion === 'conflict') return answerAfterConflict(id, request.fingerprint);
      if (exec.completion === 'lock_timeout') {
        emit(eventBase('in_use', id));
        throw isIdempotencyError(error)
          ? error
          : new IdempotencyError('idempotency_key_in_use', {
              retryAfterSeconds: ATOMIC_LOCK_TIMEOUT_RETRY_AFTER_SECONDS,
              cause: error,
            });
      }
      // The transaction rolled back (or never wrote the key): nothing is stored, retries run.
      emit(eventBase('released', id));
      throw error;
    }
    if (exec.completion !== 'inserted') {
      // Refusals and failures the handler answered itself change nothing: not stored.
      if (response.status >= 400) {
        emit(eventBase('released', id));
        return { kind: 'executed', response };
      }
      throw new AtomicCompletionMissingError(request.operation);
    }
    // No verification read: the key was inserted in the same transaction as every effect of
    // the handler, so if that transaction did not commit, no effect did either (see the ADR).
    if (limit && !found) {
      await guarded('countNewKey', id, () => store.countNewKey(scope, limit)).catch(() => {
        // Store hiccup after the commit: the answer stands; this key goes uncounted.
      });
    }
    emit(eventBase(found?.record.state === 'in_progress' ? 'lease_taken_over' : 'created', id));
    emit({ ...eventBase('completed', id), durationMs: performance.now() - handlerStarted });
    return { kind: 'executed', response };
  }

  /** Our insert met a committed duplicate and our transaction rolled back: answer with its row. */
  async function answerAfterConflict(
    id: KeyIdentity,
    fingerprint: string,
  ): Promise<ExecuteOutcome> {
    const found = await storeOr503(id, () => store.lookup(id));
    if (!found || (found.writable && canOverwrite(found.record, fingerprint))) {
      // Gone again (reaped, released) between the two statements: let the client retry.
      emit(eventBase('in_use', id));
      throw new IdempotencyError('idempotency_key_in_use', { retryAfterSeconds: 1 });
    }
    return answerExisting(id, found.record, fingerprint);
  }

  /** Make sure the key ends `completed` with this holder's response, or report the lease lost. */
  async function finishCompletion(
    exec: HeldExecution<TTx>,
    response: StoredResponse,
    policy: Required<OperationPolicy>,
  ) {
    const id = identity(exec);
    if (exec.leaseLost) throw new LeaseLostError();
    if (
      exec.completedInCallerTx &&
      (await guarded('isCompletedBy', id, () => store.isCompletedBy(id, exec.ownerToken)))
    ) {
      return;
    }
    try {
      assertStorable(response, maxResponseBytes);
    } catch (error) {
      throw await settleFailure(exec, policy, error);
    }
    // The business effect already happened: a few attempts beat leaving the key to lease expiry.
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const result = await guarded('complete', id, () =>
          store.complete(undefined, id, exec.ownerToken, response, policy.ttlMs),
        );
        // An earlier attempt may have timed out on our side yet committed on the server.
        if (
          result === 'lost' &&
          !(
            attempt > 0 &&
            (await guarded('isCompletedBy', id, () => store.isCompletedBy(id, exec.ownerToken)))
          )
        ) {
          throw exec.markLeaseLost();
        }
        return;
      } catch (error) {
        if (error instanceof LeaseLostError) throw error;
        lastError = error;
        await new Promise((resolve) => setTimeout(resolve, 50 * (attempt + 1)));
      }
    }
    throw new IdempotencyError('idempotency_store_unavailable', {
      retryAfterSeconds: STORE_UNAVAILABLE_RETRY_AFTER_SECONDS,
      message: 'The operation ran but its response could not be stored',
      cause: lastError,
    });
  }

  /**
   * Apply the failure policy and return the error to throw:
   * - lease lost: write nothing (someone else owns the key);
   * - ambiguous outcome: mark `unknown`;
   * - a phase committed: resume policy ends the lease (next retry resumes), else `unknown`;
   * - nothing committed: release (the key can run again).
   */
  async function settleFailure(
    exec: HeldExecution<TTx>,
    policy: Required<OperationPolicy>,
    error: unknown,
  ): Promise<unknown> {
    const id = identity(exec);
    if (exec.leaseLost || error instanceof LeaseLostError) return error ?? new LeaseLostError();
    const ambiguous = error instanceof AmbiguousOutcomeError;
    const toUnknown = ambiguous || (exec.phaseCommitted && policy.onExpiredLease === 'unknown');
    try {
      const result = toUnknown
        ? await guarded('markUnknown', id, () => store.markUnknown(id, exec.ownerToken))
        : exec.phaseCommitted
          ? await guarded('endLease', id, () => store.endLease(id, exec.ownerToken))
          : await guarded('release', id, () => store.release(id, exec.ownerToken));
      if (result === 'lost') return exec.markLeaseLost();
      if (result === 'ok') emit(eventBase(toUnknown ? 'unknown' : 'released', id));
    } catch {
      // Store down while cleaning up: the lease expires and the sweeper or a retry recovers.
    }
    if (ambiguous) {
      return new IdempotencyError('idempotency_outcome_unknown', {
        retryAfterSeconds: UNKNOWN_RETRY_AFTER_SECONDS,
        cause: error,
      });
    }
    return error !== undefined ? error : new Error('Handler failed');
  }

  return {
    execute,
    passthrough: ({ tenantId, operation }) =>
      new PassthroughExecution<TTx>(store, tenantId, operation),
    policyFor,
    emit,
  };
}

/** A writable row may be overwritten, except an expired lease under another fingerprint (422). */
function canOverwrite(record: KeyRecord, fingerprint: string): boolean {
  return record.state !== 'in_progress' || record.fingerprint === fingerprint;
}

function identity(value: { tenantId: string; operation: string; key: string }): KeyIdentity {
  return { tenantId: value.tenantId, operation: value.operation, key: value.key };
}

function eventBase(type: IdempotencyEventType, id: KeyIdentity): IdempotencyEvent {
  return { type, tenantId: id.tenantId, operation: id.operation };
}
