// Public face of key inspection and eviction for operators (`@once/idempotency/drizzle/operator`).
export {
  createKeyOperator,
  type KeyAuditEntry,
  type KeyDetails,
  type KeyOperator,
  type KeySummary,
  type ListKeysFilter,
  type OperatorActionInput,
} from './key-operator.ts';
export {
  isKeyOperatorError,
  KeyOperatorError,
  type KeyOperatorErrorCode,
} from './key-operator-error.ts';
