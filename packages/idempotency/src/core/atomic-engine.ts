import { AtomicKeyExecution } from './atomic-execution.ts';
import { createAtomicFailureAnswers } from './atomic-failure.ts';
import { mayOverwriteFoundKey } from './decision.ts';
import {
  type EngineContext,
  type ExecuteOutcome,
  type ExecuteRequest,
  type Waiting,
  waitingFor,
} from './engine-context.ts';
import type { Execution } from './execution.ts';
import { createNewKeyGate } from './new-key-gate.ts';
import { createPrecheckAdvisor, type PrecheckPlan } from './precheck-advisor.ts';
import {
  identity,
  type KeyIdentity,
  type KeyLookup,
  type OperationPolicy,
  type StoredResponse,
} from './types.ts';

/**
 * Atomic mode (docs/decisions/0007-atomic-mode.md): at most one read before the handler (the
 * policy's `precheck`: always, never, or when recent requests found their keys taken), the key
 * inserted completed inside the handler's transaction. The read only saves work for retries of
 * finished keys; the primary key inside the business transaction is what decides. No lease,
 * heartbeat, owner token or phases.
 */
export function createAtomicEngine<TTx>(context: EngineContext<TTx>) {
  const { store, emitKeyEvent, callStore } = context;
  const advisor = createPrecheckAdvisor();
  const gate = createNewKeyGate(context);
  const answers = createAtomicFailureAnswers(context);

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
   * answered. The success path is written out here; failures are `atomic-failure.ts`'s.
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
      const exec = new AtomicKeyExecution<TTx>({
        store,
        id,
        fingerprint: request.fingerprint,
        ttlMs: policy.ttlMs,
        tombstoneMs: policy.tombstoneMs,
        maxResponseBytes: context.maxResponseBytes,
        waitDeadline: start.waiting?.deadline,
      });
      try {
        const handlerStarted = performance.now();
        const commits = context.watchCommits();
        let response: StoredResponse;
        try {
          response = await handler(exec);
        } catch (error) {
          return await answers.answerFailure(request, id, start.plan, exec, error);
        }
        if (exec.completion !== 'inserted')
          return await answers.answerUncompleted(request, id, start.plan, response);
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
}
