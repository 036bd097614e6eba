// Public face of the framework-free core. Adapters and the store live in their own entry points.
export { decideForExistingKey, type ExistingKeyDecision } from './core/decision.ts';
export {
  type AtomicExecuteRequest,
  createIdempotency,
  type ExecuteOutcome,
  type ExecuteRequest,
  type Idempotency,
  type IdempotencyOptions,
} from './core/engine.ts';
export {
  AmbiguousOutcomeError,
  AtomicCompletionMissingError,
  AtomicKeyConflictError,
  IDEMPOTENCY_ERRORS,
  IdempotencyError,
  type IdempotencyErrorCode,
  type IdempotencyTrpcCode,
  isIdempotencyError,
  LeaseLostError,
  PROBLEM_TYPE_BASE,
} from './core/errors.ts';
export type { AtomicExecution, Execution, Phase } from './core/execution.ts';
export { computeFingerprint } from './core/fingerprint.ts';
export {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  parseIdempotencyKey,
} from './core/key.ts';
export { advanceTo, type PhaseResult, respond } from './core/phases.ts';
export {
  type IdempotencyEvent,
  type IdempotencyEventType,
  type IdempotencyStore,
  INITIAL_RECOVERY_POINT,
  type KeyRecord,
  type KeyState,
  type OperationPolicy,
  type RateLimitScope,
  type StoredResponse,
} from './core/types.ts';
