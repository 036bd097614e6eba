import { randomUUID } from 'node:crypto';
import { commitOutcomeUnknown, isLostConnection } from './commit-outcome.ts';
import { UNKNOWN_RETRY_AFTER_SECONDS } from './decision.ts';
import {
  type EngineContext,
  type ExecuteOutcome,
  type ExecuteRequest,
  STORE_UNAVAILABLE_RETRY_AFTER_SECONDS,
  waitingFor,
} from './engine-context.ts';
import { IdempotencyError, isIdempotencyError, LeaseLostError } from './errors.ts';
import { type Execution, HeldExecution, type Phase } from './execution.ts';
import { createHeartbeatScheduler } from './heartbeat.ts';
import { createPrecheckAdvisor } from './precheck-advisor.ts';
import { assertStorable } from './response-size.ts';
import {
  identity,
  type KeyIdentity,
  type OperationPolicy,
  type ReserveResult,
  type StoredResponse,
} from './types.ts';

/** What the completer did with one key it took over: completed it, or why not. */
export type ResumedKey =
  | { id: KeyIdentity; response: StoredResponse; error?: undefined }
  | { id: KeyIdentity; error: unknown };

/**
 * Leased mode, the default: the key is reserved (committed) before the handler runs and held
 * with a lease and an owner token, renewed by one heartbeat; the handler may commit phase by
 * phase, call other systems, and complete inside its own transaction or after it. Its failure
 * is settled by policy: released, lease ended for a resume, or `unknown`.
 */
export function createLeasedEngine<TTx>(context: EngineContext<TTx>) {
  const { store, emitKeyEvent, callStore, maxResponseBytes } = context;
  const heartbeats = createHeartbeatScheduler();
  const advisor = createPrecheckAdvisor();

  /** The reservation (`store.reserve`); a store failure answers 503 and runs nothing. */
  function reserve(
    id: KeyIdentity,
    request: ExecuteRequest,
    ownerToken: string,
    policy: Required<OperationPolicy>,
  ) {
    return callStore(
      'reserve',
      id,
      () =>
        store.reserve({
          tenantId: id.tenantId,
          operation: id.operation,
          key: id.key,
          fingerprint: request.fingerprint,
          ownerToken,
          leaseMs: policy.leaseMs,
          ttlMs: policy.ttlMs,
          tombstoneMs: policy.tombstoneMs,
          onExpiredLease: policy.onExpiredLease,
          principal: request.principal ?? '',
          rateLimit: policy.rateLimited ? context.rateLimit : undefined,
        }),
      {
        failClosed: true,
        // The reservation landed after we answered 503: give the key back so a retry runs.
        onLateSuccess: (late) => {
          if (late.kind === 'acquired') store.release(id, ownerToken).catch(() => {});
        },
      },
    );
  }

  async function executeLeased(
    request: ExecuteRequest,
    policy: Required<OperationPolicy>,
    handler: (exec: Execution<TTx>) => Promise<StoredResponse>,
  ): Promise<ExecuteOutcome> {
    const id = identity(request);
    const { readFirst, record } = advisor.planFor(request.operation, policy.precheck);
    if (readFirst) {
      // A finished key is answered by a plain read. The reservation would answer it too, but
      // its INSERT ... ON CONFLICT locks the row it conflicts with, which makes it a write
      // transaction whose commit waits for a WAL flush: a replay's whole cost, for nothing.
      const found = await callStore('lookup', id, () => store.lookup(id), { failClosed: true });
      if (found?.record.state === 'completed' && !found.writable) {
        record(true);
        return context.answerExisting(id, found.record, request.fingerprint);
      }
    }
    const ownerToken = randomUUID();
    const waiting = waitingFor(policy);
    let reservation: Awaited<ReturnType<typeof reserve>>;
    for (;;) {
      reservation = await reserve(id, request, ownerToken, policy);
      record(reservation.kind === 'existing');
      if (reservation.kind === 'rate_limited')
        throw context.refuseRateLimited(id, reservation.retryAfterSeconds);
      if (reservation.kind === 'acquired') break;
      const answer = await context.answerExistingOrWait(
        id,
        reservation.record,
        request.fingerprint,
        waiting,
        true,
      );
      // Nobody holds the key any more: reserve again; of several waiters exactly one gets it.
      if (answer !== 'free') return answer;
    }

    try {
      return await runHeld(id, policy, handler, reservation, ownerToken);
    } finally {
      // Whatever the key settled to, duplicates waiting in this process read it now.
      context.wakeups.wake(id);
    }
  }

  /**
   * The completer's attempt (`createCompleter`): take over ONE key of `operation` left at a
   * recovery point past its lease (`store.claimResumable`) and run its remaining `phases` as
   * the retry resuming it would (same heartbeat, fencing, failure policy and events).
   * Undefined when no key is left; otherwise the key and its response, or why it stopped.
   */
  async function resumeOne(
    operation: string,
    policy: Required<OperationPolicy>,
    phases: Record<string, Phase<TTx>>,
    graceMs: number,
  ): Promise<ResumedKey | undefined> {
    const claimResumable = store.claimResumable?.bind(store);
    if (!claimResumable) throw new Error('This store cannot claim keys for a completer');
    const ownerToken = randomUUID();
    const { leaseMs } = policy;
    const claimed = await callStore(
      'claimResumable',
      { tenantId: '', operation, key: '' },
      () => claimResumable({ operation, ownerToken, leaseMs, graceMs }),
      // Claimed after we gave up on it: hand it back at once rather than at the end of its lease.
      { onLateSuccess: (late) => late && store.endLease(late.id, ownerToken).catch(() => {}) },
    );
    if (!claimed) return undefined;
    const { id, record } = claimed;
    const reservation = { kind: 'acquired', record, created: false, takenOver: true } as const;
    try {
      const outcome = await runHeld(
        id,
        policy,
        (exec) => exec.runPhases(phases),
        reservation,
        ownerToken,
      );
      if (outcome.kind === 'executed' && outcome.response.status < 500)
        return { id, response: outcome.response };
      return { id, error: new Error(`The phases of ${operation} answered a server error`) };
    } catch (error) {
      return { id, error };
    } finally {
      context.wakeups.wake(id);
    }
  }

  return { execute: executeLeased, resume: resumeOne };

  async function runHeld(
    id: KeyIdentity,
    policy: Required<OperationPolicy>,
    handler: (exec: Execution<TTx>) => Promise<StoredResponse>,
    reservation: Extract<ReserveResult, { kind: 'acquired' }>,
    ownerToken: string,
  ): Promise<ExecuteOutcome> {
    emitKeyEvent(reservation.takenOver ? 'lease_taken_over' : 'created', id);
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
      onLeaseLost: () => emitKeyEvent('lease_lost', id),
    });
    const heartbeat = policy.heartbeat
      ? heartbeats.start({
          intervalMs: Math.max(50, Math.floor(policy.leaseMs / 3)),
          renew: () => callStore('renew', id, () => store.renew(id, ownerToken, policy.leaseMs)),
          onLost: () => exec.markLeaseLost(),
        })
      : undefined;

    const handlerStarted = performance.now();
    const commits = context.watchCommits();
    let response: StoredResponse;
    try {
      response = await handler(exec);
    } catch (error) {
      await heartbeat?.stop();
      if ((exec.completedInCallerTx || exec.phaseCommitted) && isLostConnection(error)) {
        // The connection broke after the key was completed or advanced, maybe during COMMIT:
        // never release the key (its effects may have committed); end the lease so the retry
        // re-reads it: completed, it replays; at a recovery point, it resumes from there.
        exec.phaseCommitted = true;
        await settleFailure(exec, policy, error);
        throw commitOutcomeUnknown('the connection was lost after the key was written', error);
      }
      // An adapter could not turn what the handler returned into a stored response: the
      // handler itself finished, so its commits stand.
      const returned = isIdempotencyError(error, 'idempotency_result_unstorable');
      throw await settleFailure(exec, policy, error, returned);
    }
    await heartbeat?.stop();

    // 5xx is never stored: it says "the server failed", and the client should be able to retry.
    if (response.status >= 500 && !exec.completedInCallerTx) {
      await settleFailure(exec, policy, undefined);
      return { kind: 'executed', response };
    }
    await finishCompletion(id, exec, response, policy);
    emitKeyEvent('completed', id, performance.now() - handlerStarted);
    commits.assertReplicated();
    return { kind: 'executed', response };
  }

  /** Make sure the key ends `completed` with this holder's response, or report the lease lost. */
  async function finishCompletion(
    id: KeyIdentity,
    exec: HeldExecution<TTx>,
    response: StoredResponse,
    policy: Required<OperationPolicy>,
  ) {
    if (exec.leaseLost) throw new LeaseLostError();
    // Completed inside the handler's transaction: no verification read. The completion's
    // UPDATE ... RETURNING matched this holder's row (owner token, still in progress), and the
    // row lock it took fences every takeover until that transaction ends, so the commit that
    // made the handler's effects durable made this completion durable with them. Had the
    // transaction rolled back (the handler swallowed its failure), nothing of it committed:
    // the key stays held until its lease ends and the next retry runs the operation again,
    // rather than replaying a response for effects that never happened.
    if (exec.completedInCallerTx) return;
    try {
      assertStorable(response, maxResponseBytes);
    } catch (error) {
      throw await settleFailure(exec, policy, error, true);
    }
    // The business effect already happened: a few attempts beat leaving the key to lease expiry.
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const result = await callStore('complete', id, () =>
          store.complete(undefined, id, exec.ownerToken, response, policy.ttlMs),
        );
        // An earlier attempt may have timed out on our side yet committed on the server.
        if (
          result === 'lost' &&
          !(
            attempt > 0 &&
            (await callStore('isCompletedBy', id, () => store.isCompletedBy(id, exec.ownerToken)))
          )
        ) {
          throw exec.markLeaseLost();
        }
        return;
      } catch (error) {
        if (isIdempotencyError(error, 'idempotency_lease_lost')) throw error;
        lastError = error;
        await new Promise((resolve) => setTimeout(resolve, 50 * (attempt + 1)));
      }
    }
    throw await settleFailure(
      exec,
      policy,
      new IdempotencyError('idempotency_store_unavailable', {
        retryAfterSeconds: STORE_UNAVAILABLE_RETRY_AFTER_SECONDS,
        message: 'The operation ran but its response could not be stored',
        cause: lastError,
      }),
      true,
    );
  }

  /**
   * Apply the failure policy and return the error to throw:
   * - lease lost: write nothing (someone else owns the key);
   * - ambiguous outcome, or the handler returned but its response could not be stored
   *   (`handlerReturned`: whatever it committed stands, a retry must not run it again): mark `unknown`;
   * - a phase committed: resume policy ends the lease (next retry resumes), else `unknown`;
   * - nothing committed: release (the key can run again).
   */
  async function settleFailure(
    exec: HeldExecution<TTx>,
    policy: Required<OperationPolicy>,
    error: unknown,
    handlerReturned = false,
  ): Promise<unknown> {
    const id = identity(exec);
    if (exec.leaseLost || isIdempotencyError(error, 'idempotency_lease_lost'))
      return error ?? new LeaseLostError();
    const ambiguous = isIdempotencyError(error, 'idempotency_outcome_ambiguous');
    const toUnknown =
      ambiguous || handlerReturned || (exec.phaseCommitted && policy.onExpiredLease === 'unknown');
    const settle = () =>
      toUnknown
        ? callStore('markUnknown', id, () => store.markUnknown(id, exec.ownerToken))
        : exec.phaseCommitted
          ? callStore('endLease', id, () => store.endLease(id, exec.ownerToken))
          : callStore('release', id, () => store.release(id, exec.ownerToken));
    try {
      // A pool may hand out once more the connection the failure just lost: one retry takes
      // another, or the key stays held until its lease ends (atomic mode holds none). A retry
      // refused (a phase the cut handler committed unawares) ends as a failed clean-up did.
      let retried = false;
      const result = await settle().catch((cleanupError: unknown) => {
        if (!isLostConnection(cleanupError)) throw cleanupError;
        retried = true;
        return settle();
      });
      if (result === 'lost' && !retried) return exec.markLeaseLost();
      if (result === 'ok') emitKeyEvent(toUnknown ? 'unknown' : 'released', id);
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
}
