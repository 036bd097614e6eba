/**
 * Why an operator action on a key was refused. Stable: tools may switch on them.
 * - `key_not_found`: no such key (never created, reaped, or evicted meanwhile);
 * - `key_changed`: the key is no longer the one the operator saw (its `revision` differs):
 *   look again before acting;
 * - `key_not_releasable` / `key_not_evictable`: the key's state forbids the action (see the
 *   rules on `KeyOperator`);
 * - `invalid_input`: a missing reason or actor, a limit out of range; nothing was read or written.
 */
export type KeyOperatorErrorCode =
  | 'key_not_found'
  | 'key_changed'
  | 'key_not_releasable'
  | 'key_not_evictable'
  | 'invalid_input';

/** A refused operator action; nothing was changed and nothing was audited. */
export class KeyOperatorError extends Error {
  readonly _tag = 'KeyOperatorError';
  constructor(
    readonly code: KeyOperatorErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'KeyOperatorError';
  }
}

/** Whether `value` is a `KeyOperatorError` (optionally with `code`), also across module copies. */
export function isKeyOperatorError(
  value: unknown,
  code?: KeyOperatorErrorCode,
): value is KeyOperatorError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { _tag?: unknown })._tag === 'KeyOperatorError' &&
    (code === undefined || (value as { code?: unknown }).code === code)
  );
}
