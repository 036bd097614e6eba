// The root entry: what an application needs to guard an operation. Adapters, the Postgres
// store, the store author's types and the store contract live in their own entry points.

export {
  type CompleterOptions,
  type CompleterPass,
  createCompleter,
} from './completer/completer.ts';
export { createCommitNoticeWatch } from './core/commit-outcome.ts';
export { createIdempotency, type Idempotency } from './core/engine.ts';
export {
  type IdempotencyOptions,
  STORE_UNAVAILABLE_RETRY_AFTER_SECONDS,
} from './core/engine-context.ts';
export {
  AmbiguousOutcomeError,
  IdempotencyError,
  type IdempotencyErrorCode,
  isIdempotencyError,
} from './core/errors.ts';
export type { Execution, Phase } from './core/execution.ts';
export { computeFingerprint } from './core/fingerprint.ts';
export {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  parseIdempotencyKey,
} from './core/key.ts';
export { advanceTo, respond } from './core/phases.ts';
export type { IdempotencyEvent, OperationPolicy, StoredResponse } from './core/types.ts';
