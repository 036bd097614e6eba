import { ATOMIC_LOCK_TIMEOUT_RETRY_AFTER_SECONDS, AtomicKeyExecution } from './atomic-execution.ts';
import { commitOutcomeUnknown, isLostConnection } from './commit-outcome.ts';
import { mayOverwriteFoundKey } from './decision.ts';
import {
  type EngineContext,
  type ExecuteOutcome,
  type ExecuteRequest,
  identity,
  type Waiting,
  waitingFor,
} from './engine-context.ts';
import { AtomicCompletionMissingError, IdempotencyError, isIdempotencyError } from './errors.ts';
import type { Execution } from './execution.ts';
import { createNewKeyGate } from './new-key-gate.ts';
import { createPrecheckAdvisor, type PrecheckPlan } from './precheck-advisor.ts';
import type { KeyIdentity, KeyLookup, OperationPolicy, StoredResponse } from './types.ts';

/**
 * Atomic mode (docs/decisions/0007-atomic-mode.md): at most one read before the handler (the
 * policy's `precheck`: always, never, or when recent requests found their keys taken), the key
 * inserted completed inside the handler's transaction. The read only saves work for retries of
 * finished keys; the primary key inside the business transaction is what decides. No lease,
 * heartbeat, owner token or phases.
 *
 * @example
 * const runAtomic = createAtomicEngine(context);
 * const outcome = await runAtomic(request, policy, async (exec) => db.transaction(...));
 */
export function createAtomicEngine<TTx>(context: EngineContext<TTx>) {
  const { store, emitKeyEvent, callStore } = context;
  const advisor = createPrecheckAdvisor();
  const gate = createNewKeyGate(context);

  return async function executeAtomic(
    request: ExecuteRequest,
    policy: Required<OperationPolicy>,
    handler: (exec: Execution<TTx>) => Promise<StoredResponse>,
  ): Promise<ExecuteOutcome> {
    const start: Start = {
      id: identity(request),
      found: undefined,
      waiting: waitingFor(policy),
      // What this request found is recorded for the advisor whichever path it took.
      plan: advisor.planFor(request.operation, policy.precheck),
    };
    if (start.plan.readFirst) {
      const answer = await readFirst(request, start);
      if (answer) return answer;
    }
    return runAtomic(request, policy, handler, start);
  };

  /** How the request got here: its key, what the read before the handler found, if it read. */
  interface Start {
    id: KeyIdentity;
    found: KeyLookup | undefined;
    waiting: Waiting | undefined;
    plan: PrecheckPlan;
  }

  /** The pre-check: a finished key is answered from its row, without running the handler. */
  async function readFirst(
    request: ExecuteRequest,
    start: Start,
  ): Promise<ExecuteOutcome | undefined> {
    const { id } = start;
    for (;;) {
      const found = await callStore('lookup', id, () => store.lookup(id), { failClosed: true });
      start.found = found;
      if (!found || mayOverwriteFoundKey(found, request.fingerprint)) return undefined;
      start.plan.record(true);
      // Held by a leased attempt of the same key: wait for it if the policy says so.
      const answer = await context.answerExistingOrWait(
        id,
        found.record,
        request.fingerprint,
        start.waiting,
        false,
      );
      if (answer !== 'free') return answer;
    }
  }

  /**
   * The request's one attempt: let in by the rate-limit gate, the handler run, and what it did
   * answered. The success path is written out here; failures are `answerFailure`.
   */
  async function runAtomic(
    request: ExecuteRequest,
    policy: Required<OperationPolicy>,
    handler: (exec: Execution<TTx>) => Promise<StoredResponse>,
    start: Start,
  ): Promise<ExecuteOutcome> {
    const { id } = start;
    try {
      const admission = await gate.admit(id, request, policy, start);
      if (admission.kind !== 'admitted') return admission;
      const exec = newExecution(id, request, policy, start.waiting);
      try {
        const handlerStarted = performance.now();
        const commits = context.watchCommits();
        let response: StoredResponse;
        try {
          response = await handler(exec);
        } catch (error) {
          return await answerFailure(request, exec, start, error);
        }
        if (exec.completion !== 'inserted')
          return await answerUncompleted(request, start, response);
        start.plan.record(false);
        commits.assertReplicated();
        // No verification read: the key was inserted in the same transaction as every effect of
        // the handler, so if that transaction did not commit, no effect did either (see the ADR).
        emitKeyEvent(
          start.found?.record.state === 'in_progress' ? 'lease_taken_over' : 'created',
          id,
        );
        emitKeyEvent('completed', id, performance.now() - handlerStarted);
        return { kind: 'executed', response };
      } finally {
        await admission.settle(exec.completion === 'inserted');
      }
    } finally {
      context.wakeups.wake(id);
    }
  }

  function newExecution(
    id: KeyIdentity,
    request: ExecuteRequest,
    policy: Required<OperationPolicy>,
    waiting: Waiting | undefined,
  ): AtomicKeyExecution<TTx> {
    return new AtomicKeyExecution<TTx>({
      store,
      id,
      fingerprint: request.fingerprint,
      ttlMs: policy.ttlMs,
      maxResponseBytes: context.maxResponseBytes,
      // Under waitForResult the insert waits for a duplicate's uncommitted key as long as the
      // bound has left (then 409), instead of the connection's lock_timeout: when that
      // transaction commits, this one rolls back and replays it; when it rolls back, this one runs.
      lockWaitMs: waiting
        ? () => Math.max(1, Math.ceil(waiting.deadline - performance.now()))
        : undefined,
    });
  }

  /** The handler threw: what its execution saw says whether the key is stored, taken or free. */
  async function answerFailure(
    request: ExecuteRequest,
    exec: AtomicKeyExecution<TTx>,
    { id, plan }: Start,
    error: unknown,
  ): Promise<ExecuteOutcome> {
    // Whatever wrapped it (tRPC, the caller's own error handling), the execution knows.
    if (exec.completion === 'inserted' && isLostConnection(error)) {
      // The connection broke after the key was written, maybe during COMMIT: the key is
      // committed with everything or with nothing, and never read back to tell which. A COMMIT
      // whose synchronous-replication wait was terminated is visible on this server before
      // its standby has it: answering what a read shows would acknowledge a commit a
      // failover can still lose. The retry's insert meets the committed key or runs what
      // never committed.
      plan.record(false);
      throw commitOutcomeUnknown('the connection was lost after the key was written', error);
    }
    if (exec.completion === 'conflict') {
      plan.record(true);
      return answerAfterConflict(id, request.fingerprint);
    }
    if (exec.completion === 'lock_timeout') {
      plan.record(true);
      emitKeyEvent('in_use', id);
      throw isIdempotencyError(error)
        ? error
        : new IdempotencyError('idempotency_key_in_use', {
            retryAfterSeconds: ATOMIC_LOCK_TIMEOUT_RETRY_AFTER_SECONDS,
            cause: error,
          });
    }
    const replay = await replayIfFinished(id, request.fingerprint);
    plan.record(replay !== undefined);
    if (replay) return replay;
    // The transaction rolled back (or never wrote the key): nothing is stored, retries run.
    emitKeyEvent('released', id);
    throw error;
  }

  /** Our insert met a committed duplicate and our transaction rolled back: answer with its row. */
  async function answerAfterConflict(
    id: KeyIdentity,
    fingerprint: string,
  ): Promise<ExecuteOutcome> {
    const found = await callStore('lookup', id, () => store.lookup(id), { failClosed: true });
    if (!found || mayOverwriteFoundKey(found, fingerprint)) {
      // Gone again (reaped, released) between the two statements: let the client retry.
      emitKeyEvent('in_use', id);
      throw new IdempotencyError('idempotency_key_in_use', { retryAfterSeconds: 1 });
    }
    return context.answerExisting(id, found.record, fingerprint);
  }

  /** The handler returned without completing the key: a refusal it answered, or a mistake. */
  async function answerUncompleted(
    request: ExecuteRequest,
    { id, plan }: Start,
    response: StoredResponse,
  ): Promise<ExecuteOutcome> {
    // Refusals and failures the handler answered itself change nothing: not stored.
    if (response.status >= 400) {
      const replay = await replayIfFinished(id, request.fingerprint);
      plan.record(replay !== undefined);
      if (replay) return replay;
      emitKeyEvent('released', id);
      return { kind: 'executed', response };
    }
    throw new AtomicCompletionMissingError(request.operation);
  }

  /**
   * A handler may meet the effects of an earlier attempt of its own request before it
   * reaches `complete` (its business check finds the order paid, a unique index refuses the
   * second row) and fail or refuse: a retry that did not read first, or a duplicate whose
   * read came before that attempt committed (the read saw no key, the row lock then showed
   * the effect). The request was done: if the key holds a finished answer to this same
   * request, that answer is the replay. Anything else (no key, an expired one, another
   * request's key, a store failure now) leaves the handler's own outcome.
   */
  async function replayIfFinished(
    id: KeyIdentity,
    fingerprint: string,
  ): Promise<ExecuteOutcome | undefined> {
    const found = await callStore('lookup', id, () => store.lookup(id)).catch(() => undefined);
    // An expired answer (`writable`) answers nothing: past its retention the handler decides.
    if (
      !found ||
      found.writable ||
      found.record.state !== 'completed' ||
      found.record.fingerprint !== fingerprint
    )
      return undefined;
    return context.answerExisting(id, found.record, fingerprint);
  }
}
