import { ATOMIC_LOCK_TIMEOUT_RETRY_AFTER_SECONDS } from './atomic-execution.ts';
import { mayOverwriteFoundKey } from './decision.ts';
import type { EngineContext, ExecuteOutcome, ExecuteRequest } from './engine-context.ts';
import { IdempotencyError } from './errors.ts';
import type { PrecheckPlan } from './precheck-advisor.ts';
import type { KeyIdentity, KeyLookup, OperationPolicy, RateLimitScope } from './types.ts';

/**
 * A request let through the gate. `settle` runs once the attempt ended: the count of a key that
 * was not stored is given back, and the request no longer runs here.
 */
export interface Admitted {
  kind: 'admitted';
  settle(stored: boolean): Promise<void>;
}

/**
 * Atomic mode's rate-limit gate (`rateLimit`): a new key is counted against its principal's
 * allowance BEFORE the handler, in one conditional UPSERT (below the cap or not at all), so
 * concurrent new keys of one principal cannot pass the cap together; the count is given back
 * when the request stores no key. At the cap, a retry of a finished key is answered and a
 * duplicate of a key running here is in use; only a new key is refused, and a refusal counts
 * nothing. (Leased mode counts inside its reservation's statement instead.) Used by
 * `runAtomic`: one `admit` before the handler, one `settle` after it.
 */
export function createNewKeyGate<TTx>(context: EngineContext<TTx>) {
  const { store, callStore, emitKeyEvent } = context;
  const running = createRunningKeys();

  /** A new key counted against its principal's allowance. */
  interface Counted {
    kind: 'counted';
    scope: RateLimitScope;
    limit: { maxNewKeys: number; windowMs: number };
  }

  async function countNewKey(
    id: KeyIdentity,
    request: ExecuteRequest,
    limit: { maxNewKeys: number; windowMs: number },
    plan: PrecheckPlan,
  ): Promise<Counted | ExecuteOutcome> {
    const scope = { tenantId: id.tenantId, principal: request.principal ?? '' };
    const count = await callStore('countNewKey', id, () => store.countNewKey(scope, limit), {
      failClosed: true,
    });
    if (!count.limited) return { kind: 'counted', scope, limit };
    // Without the pre-check this may be a retry of a finished key, which is answered, never
    // refused: read the key before refusing (only when the principal is limited).
    if (!plan.readFirst) {
      const existing = await callStore('lookup', id, () => store.lookup(id), { failClosed: true });
      if (existing && !mayOverwriteFoundKey(existing, request.fingerprint)) {
        plan.record(true);
        return context.answerExisting(id, existing.record, request.fingerprint);
      }
    }
    // A duplicate of a key still running here may hold the count that filled the window: it is
    // in use (409, as without a cap), not a new key.
    if (running.othersThan(id)) {
      plan.record(true);
      emitKeyEvent('in_use', id);
      throw new IdempotencyError('idempotency_key_in_use', {
        retryAfterSeconds: ATOMIC_LOCK_TIMEOUT_RETRY_AFTER_SECONDS,
      });
    }
    throw context.refuseRateLimited(id, count.retryAfterSeconds);
  }

  /** Give back the count of a request that stored no key; a store hiccup keeps it (the strict side). */
  async function giveBack(id: KeyIdentity, { scope, limit }: Counted) {
    if (!store.giveBackNewKey) return;
    await callStore('giveBackNewKey', id, async () => store.giveBackNewKey?.(scope, limit)).catch(
      () => {},
    );
  }

  return {
    /**
     * Let the request's attempt in, or answer it at the cap. A key the pre-check found (`found`)
     * is no new key and is not counted.
     */
    async admit(
      id: KeyIdentity,
      request: ExecuteRequest,
      policy: Required<OperationPolicy>,
      { found, plan }: { found: KeyLookup | undefined; plan: PrecheckPlan },
    ): Promise<Admitted | ExecuteOutcome> {
      if (!context.rateLimit) return UNLIMITED;
      // Marked running BEFORE counting: a duplicate refused at the cap while this request counts
      // must see it running here (409 in use), not take it for a new key (429).
      const leave = running.enter(id);
      if (!policy.rateLimited || found) return { kind: 'admitted', settle: async () => leave() };
      try {
        const count = await countNewKey(id, request, context.rateLimit, plan);
        if (count.kind === 'counted') {
          return {
            kind: 'admitted',
            async settle(stored) {
              if (!stored) await giveBack(id, count);
              leave();
            },
          };
        }
        leave();
        return count;
      } catch (error) {
        leave();
        throw error;
      }
    },
  };
}

/** An engine without a rate limit counts nothing and keeps no running keys. */
const UNLIMITED: Admitted = { kind: 'admitted', settle: async () => {} };

/** Keys with a request running in this process, to tell a duplicate at the cap from a new key. */
function createRunningKeys() {
  const counts = new Map<string, number>();
  const keyOf = (id: KeyIdentity) => `${id.tenantId}\u0000${id.operation}\u0000${id.key}`;
  return {
    /** True when another request than the caller (itself marked running) runs `id` here. */
    othersThan: (id: KeyIdentity) => (counts.get(keyOf(id)) ?? 0) > 1,
    /** Mark `id` running; the returned function marks this request done. */
    enter(id: KeyIdentity): () => void {
      const key = keyOf(id);
      counts.set(key, (counts.get(key) ?? 0) + 1);
      return () => {
        const left = (counts.get(key) ?? 1) - 1;
        if (left === 0) counts.delete(key);
        else counts.set(key, left);
      };
    },
  };
}
