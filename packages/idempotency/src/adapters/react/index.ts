// React (and any browser client): one Idempotency-Key per intent, kept across reloads and
// tabs, locked while an outcome is unknown, and a retry policy that never mints a new key.
// Everything but the hook is framework-free.
export { attemptForIntent } from '../../client/attempt-for-intent.ts';
export type { AttemptOutcome, AttemptOutcomeKind } from '../../client/attempt-outcome.ts';
export {
  answerEffect,
  IdempotencyKeyManager,
  type IdempotencyKeyManagerOptions,
  type IntentDescription,
  type IntentStatus,
  IntentStorageError,
  type IntentStorageErrorCode,
  intentStorageKey,
  isLocked,
  type KeyValueStorage,
  type StoredIntent,
} from '../../client/idempotency-key-manager.ts';
export { newIdempotencyKey } from '../../client/random-key.ts';
export {
  type RetryFlowOptions,
  type RetryFlowState,
  runRetryFlow,
} from '../../client/retry-flow.ts';
export {
  type IdempotencyKeyState,
  type UseIdempotencyKeyOptions,
  useIdempotencyKey,
} from './use-idempotency-key.ts';
