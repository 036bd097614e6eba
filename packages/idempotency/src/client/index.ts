// The framework-free browser client: one Idempotency-Key per intent, kept across reloads and
// tabs, locked while an outcome is unknown, and a retry policy that never mints a new key.
// The React hook over it is `./react`.
export { attemptForIntent } from './attempt-for-intent.ts';
export type { AttemptOutcome } from './attempt-outcome.ts';
export {
  IdempotencyKeyManager,
  type IdempotencyKeyManagerOptions,
  type IntentDescription,
  IntentStorageError,
  intentStorageKey,
  type KeyValueStorage,
  type StoredIntent,
} from './idempotency-key-manager.ts';
export { newIdempotencyKey } from './random-key.ts';
export { type RetryFlowOptions, type RetryFlowState, runRetryFlow } from './retry-flow.ts';
