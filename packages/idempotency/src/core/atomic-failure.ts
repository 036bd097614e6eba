import {
  ATOMIC_LOCK_TIMEOUT_RETRY_AFTER_SECONDS,
  type AtomicKeyExecution,
} from './atomic-execution.ts';
import { commitOutcomeUnknown, isLostConnection } from './commit-outcome.ts';
import { mayOverwriteFoundKey } from './decision.ts';
import type { EngineContext, ExecuteOutcome, ExecuteRequest } from './engine-context.ts';
import { AtomicCompletionMissingError, IdempotencyError, isIdempotencyError } from './errors.ts';
import type { PrecheckPlan } from './precheck-advisor.ts';
import type { KeyIdentity, StoredResponse } from './types.ts';

/**
 * How atomic mode answers an attempt whose key was not inserted and committed: the handler threw
 * (`answerFailure`) or returned without completing (`answerUncompleted`). What the execution's
 * insert saw decides whether the key is stored (outcome unknown), taken (replay) or free.
 * Each answer tells the pre-check advisor (`plan.record`) whether the key was found taken.
 */
export function createAtomicFailureAnswers<TTx>(context: EngineContext<TTx>) {
  const { store, emitKeyEvent, callStore } = context;

  /** The handler threw: what its execution saw says whether the key is stored, taken or free. */
  async function answerFailure(
    request: ExecuteRequest,
    id: KeyIdentity,
    plan: PrecheckPlan,
    exec: AtomicKeyExecution<TTx>,
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
    id: KeyIdentity,
    plan: PrecheckPlan,
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

  return { answerFailure, answerUncompleted };
}
