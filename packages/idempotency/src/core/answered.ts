import { type IdempotencyErrorCode, isIdempotencyError } from './errors.ts';

/**
 * The refusals a key answers for itself, told like its executions and replays: the key still
 * in flight or its outcome unknown (409), or taken by another request (422). Other failures
 * (a missing key, the store down, a handler's error that releases the key) are not the key's
 * answers and are not told.
 */
const KEY_REFUSALS = [
  'idempotency_key_in_use',
  'idempotency_outcome_unknown',
  'idempotency_key_reused',
] as const satisfies readonly IdempotencyErrorCode[];
export type KeyRefusal = (typeof KEY_REFUSALS)[number];

/**
 * How a guarded request with a key was answered, as an adapter's `onAnswered` hook hears it:
 * `executed` (this request ran the handler), `replayed` (the stored answer of an earlier
 * request, the handler did not run) or `refused` (a 409 or 422 of the key: `refusal` says
 * which; nothing ran). The refusal still reaches the caller as its error.
 */
export interface IdempotencyAnswer {
  outcome: 'executed' | 'replayed' | 'refused';
  tenantId: string;
  operation: string;
  /** The request's key, as the guard parsed it. */
  key: string;
  fingerprint: string;
  /** A `refused` answer's code. */
  refusal?: KeyRefusal;
}

/** The key's own refusal in a guard's error, if it is one (see {@link KEY_REFUSALS}). */
export function keyRefusalOf(error: unknown): KeyRefusal | undefined {
  if (!isIdempotencyError(error)) return undefined;
  return (KEY_REFUSALS as readonly string[]).includes(error.code)
    ? (error.code as KeyRefusal)
    : undefined;
}

/**
 * Calls an adapter's `onAnswered` once the answer is decided (stored or replayed), awaiting it
 * before the answer is sent. Whatever it throws or rejects with is logged and dropped: a hook
 * can never turn an answered request into an error, nor change what the key holds.
 */
export async function tellAnswered<TArgs extends unknown[]>(
  hook: ((...args: TArgs) => unknown) | undefined,
  ...args: TArgs
): Promise<void> {
  if (!hook) return;
  try {
    await hook(...args);
  } catch (error) {
    console.error('@once/idempotency: onAnswered threw; the answer stands:', error);
  }
}
