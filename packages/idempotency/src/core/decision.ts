import type { KeyLookup, KeyRecord } from './types.ts';

/** Seconds a client should wait before retrying a key whose outcome is being reconciled. */
export const UNKNOWN_RETRY_AFTER_SECONDS = 30;

/**
 * Upper bound of `Retry-After` for a key in use. The lease (30 s by default, renewed by the
 * heartbeat) bounds how long the first attempt MAY take, not how long it usually takes: a
 * double-click should be answered within a second or two, not after a whole lease.
 */
const MAX_IN_USE_RETRY_AFTER_SECONDS = 2;

/**
 * What to answer when the reservation statement found a row this attempt does not own.
 * Pure: the state machine's read side, shared by the engine and the model-based test.
 */
export type ExistingKeyDecision =
  | { kind: 'replay' }
  | { kind: 'reused' }
  | { kind: 'in_use'; retryAfterSeconds: number }
  | { kind: 'unknown'; retryAfterSeconds: number }
  | { kind: 'expired' };

/**
 * Decide the answer for a key held by someone else (or finished).
 *
 * The fingerprint check comes first: a different request under a used key is always 422, even
 * while the first one runs, so a client bug is reported instead of looking like a busy key.
 */
export function decideForExistingKey(record: KeyRecord, fingerprint: string): ExistingKeyDecision {
  if (record.fingerprint !== fingerprint) return { kind: 'reused' };
  switch (record.state) {
    case 'completed':
      return { kind: 'replay' };
    case 'unknown':
      return { kind: 'unknown', retryAfterSeconds: UNKNOWN_RETRY_AFTER_SECONDS };
    case 'in_progress':
      return {
        kind: 'in_use',
        retryAfterSeconds: Math.min(
          MAX_IN_USE_RETRY_AFTER_SECONDS,
          secondsUntil(record.lockedUntil, record.now),
        ),
      };
    case 'expired':
      return { kind: 'expired' };
    case 'released':
      // The reservation takes released keys; seeing one means a concurrent change. Retry soon.
      return { kind: 'in_use', retryAfterSeconds: 1 };
  }
}

function secondsUntil(until: Date | null, now: Date): number {
  if (!until) return 1;
  return Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
}

/**
 * Atomic mode: may a new attempt with `fingerprint` overwrite the row its lookup found? The
 * store's `writable` says the row is finished or an expired lease that committed nothing
 * (`atomicMayTakeOver` in the store's key state machine); on top of that an expired lease is
 * never taken over by a DIFFERENT request (that is a reused key: 422). The TypeScript twin of
 * the store's `sameRequestUnlessFinished`, which the in-transaction insert checks itself.
 */
export function mayOverwriteFoundKey(found: KeyLookup, fingerprint: string): boolean {
  return (
    found.writable &&
    (found.record.state !== 'in_progress' || found.record.fingerprint === fingerprint)
  );
}
