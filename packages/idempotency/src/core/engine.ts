import { createAtomicEngine } from './atomic-engine.ts';
import {
  createEngineContext,
  type ExecuteOutcome,
  type ExecuteRequest,
  type IdempotencyOptions,
} from './engine-context.ts';
import {
  type AtomicExecution,
  type Execution,
  PassthroughExecution,
  type Phase,
} from './execution.ts';
import { sha256Hex } from './fingerprint.ts';
import { createLeasedEngine, type ResumedKey } from './leased-engine.ts';
import type { OperationPolicy, StoredResponse } from './types.ts';
import { assertWaitForResult } from './wait-for-result.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A request that names atomic mode itself (`policy: { mode: 'atomic' }`): its handler gets an
 * `AtomicExecution`, which has no phases, so `exec.advance` / `exec.runPhases` do not compile.
 */
type AtomicExecuteRequest = ExecuteRequest & {
  policy: OperationPolicy & { mode: 'atomic' };
};

/** The engine adapters call. See `createIdempotency`. */
export interface Idempotency<TTx> {
  /** Atomic mode named in the request: the handler's execution has no phases. */
  execute(
    request: AtomicExecuteRequest,
    handler: (exec: AtomicExecution<TTx>) => Promise<StoredResponse>,
  ): Promise<ExecuteOutcome>;
  /**
   * The mode comes from the policy (request < operations[name] < defaults; default leased).
   * When configuration picks atomic mode, phases and `advance` are refused at run time.
   */
  execute(
    request: ExecuteRequest,
    handler: (exec: Execution<TTx>) => Promise<StoredResponse>,
  ): Promise<ExecuteOutcome>;
  /** An inactive execution for a request without a key that may run unguarded. */
  passthrough(request: { tenantId: string; operation: string }): Execution<TTx>;
  /**
   * The completer's step (`createCompleter` runs it): take over one key of `operation` left
   * at a recovery point at least `graceMs` past its lease, as a retry would, and run `phases`
   * from there to the response. Undefined when no such key is left.
   */
  resumeOne(
    operation: string,
    phases: Record<string, Phase<TTx>>,
    graceMs: number,
  ): Promise<ResumedKey | undefined>;
}

/**
 * Create the idempotency engine over a store: a small dispatcher over the leased engine
 * (`leased-engine.ts`, the default) and the atomic engine (`atomic-engine.ts`), picked per
 * request by the resolved policy's `mode`.
 *
 * `execute` either runs the handler (this attempt owns the key), replays the stored response,
 * or throws an `IdempotencyError` with a stable code. A store failure or timeout fails
 * closed: 503, handler not run.
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
  // Configuration errors surface when the engine is built, not at the first request.
  assertWaitForResult(options.defaults?.waitForResult, 'defaults');
  for (const [name, policy] of Object.entries(options.operations ?? {}))
    assertWaitForResult(policy.waitForResult, name);
  const context = createEngineContext(options);
  const leased = createLeasedEngine(context);
  const executeAtomic = createAtomicEngine(context);

  function policyFor(operation: string, override?: OperationPolicy): Required<OperationPolicy> {
    const merged = { ...options.defaults, ...options.operations?.[operation], ...override };
    return {
      ttlMs: merged.ttlMs ?? DAY_MS,
      tombstoneMs: merged.tombstoneMs ?? 0,
      leaseMs: merged.leaseMs ?? 30_000,
      onExpiredLease: merged.onExpiredLease ?? 'resume',
      heartbeat: merged.heartbeat ?? true,
      rateLimited: merged.rateLimited ?? true,
      mode: merged.mode ?? 'leased',
      precheck: merged.precheck ?? 'adaptive',
      waitForResult: merged.waitForResult ?? false,
      keyScope: merged.keyScope ?? 'principal',
    };
  }

  function execute(
    request: ExecuteRequest,
    handler: (exec: Execution<TTx>) => Promise<StoredResponse>,
  ): Promise<ExecuteOutcome> {
    const policy = policyFor(request.operation, request.policy);
    try {
      assertWaitForResult(policy.waitForResult, request.operation);
    } catch (error) {
      return Promise.reject(error);
    }
    const scoped = scopedToPrincipal(request, policy);
    // The atomic execution is an `Execution` whose phase methods refuse (`AtomicKeyExecution`).
    if (policy.mode === 'atomic') return executeAtomic(scoped, policy, handler);
    return leased.execute(scoped, policy, handler);
  }

  return {
    execute,
    passthrough: ({ tenantId, operation }) =>
      new PassthroughExecution<TTx>(store, tenantId, operation),
    resumeOne(operation, phases, graceMs) {
      const policy = policyFor(operation);
      if (policy.mode === 'atomic')
        return Promise.reject(
          new Error(`${operation} runs in atomic mode: it has no phases to resume`),
        );
      return leased.resume(operation, policy, phases, graceMs);
    },
  };
}

/**
 * The request as the engines see it under `keyScope: 'principal'`: the principal is folded into
 * the fingerprint, the part of the key's row that says which request it answers. Another
 * principal with the same key then meets a different request (422), never a replay of this
 * one's response. It is not made part of the row's identity: a retry whose principal changed
 * (a renewed session) must be refused, not run again as a new key.
 */
function scopedToPrincipal(
  request: ExecuteRequest,
  policy: Required<OperationPolicy>,
): ExecuteRequest {
  if (policy.keyScope !== 'principal' || !request.principal) return request;
  const fingerprint = sha256Hex(`${request.fingerprint}\u0000principal\u0000${request.principal}`);
  return { ...request, fingerprint };
}
