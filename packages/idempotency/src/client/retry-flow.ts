import type { AttemptOutcome } from './attempt-outcome.ts';

/** Where one idempotent request stands; each phase has its own, testable UI. */
export type RetryFlowState<TResult> =
  | { phase: 'in_flight'; attempt: number }
  | { phase: 'conflict_waiting'; secondsLeft: number; attempt: number }
  | { phase: 'unknown_waiting'; secondsLeft: number; attempt: number }
  | {
      phase: 'network_retrying';
      secondsLeft: number;
      attempt: number;
      maxAttempts: number;
      detail: string;
    }
  | { phase: 'accepted'; result: TResult; replayed: boolean }
  /**
   * The flow stopped without a definite answer (retries exhausted, or the same request
   * still running after many waits): its effect may exist and may still be running. The
   * intent stays locked; only an answer for the same key (Retry) moves it on.
   */
  | { phase: 'outcome_unknown'; attempts: number; detail: string }
  | { phase: 'key_reused' }
  | { phase: 'store_unavailable'; retryAfterSeconds: number | undefined }
  | { phase: 'rate_limited'; retryAfterSeconds: number | undefined }
  | { phase: 'unauthenticated' }
  | { phase: 'rejected'; code: string; message: string }
  | { phase: 'cancelled' };

/** Options of {@link runRetryFlow}. */
export interface RetryFlowOptions<TResult> {
  /** Sends ONE request with the intent's key. Every call must send the same key. */
  send: () => Promise<AttemptOutcome<TResult>>;
  onState: (state: RetryFlowState<TResult>) => void;
  /** Resolves after `ms`; injectable so tests do not wait. */
  sleep?: (ms: number) => Promise<void>;
  /** Stops the flow (page left, user started over). */
  signal?: AbortSignal;
  /** Attempts in a row that got no answer (or a 5xx) before asking the user. */
  maxNetworkAttempts?: number;
  /** Conflict / unknown waits before asking the user (a lease outlives ~ a minute at most). */
  maxConflictWaits?: number;
  /** Seconds to wait before network retry n (1-based); the last value repeats. */
  networkBackoffSeconds?: readonly number[];
}

const DEFAULT_BACKOFF = [1, 1, 2, 3, 5, 5] as const;

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Sends one intent's request until the server gives a definite answer, retrying only where a
 * retry with the SAME key is safe and useful:
 * - conflict (the same request is running): wait the server's Retry-After, retry;
 * - no answer / lost response / 5xx: retry with bounded backoff, then stop in
 *   `outcome_unknown`: the effect may exist, so the caller keeps the intent locked and
 *   offers a retry with the same key;
 * - outcome unknown: wait Retry-After and ask again (the replay will carry the result);
 * - everything else is final and shown as is.
 * Never makes a new key: that is the caller's decision (a changed request, or a 422).
 *
 * @example
 * const final = await runRetryFlow({ send: () => sendPay(key), onState: setState });
 */
export async function runRetryFlow<TResult>(
  options: RetryFlowOptions<TResult>,
): Promise<RetryFlowState<TResult>> {
  const sleep = options.sleep ?? realSleep;
  const maxNetwork = options.maxNetworkAttempts ?? 6;
  const maxConflict = options.maxConflictWaits ?? 30;
  const backoff = options.networkBackoffSeconds ?? DEFAULT_BACKOFF;
  const cancelled = () => options.signal?.aborted === true;
  let state: RetryFlowState<TResult> = { phase: 'cancelled' };
  const emit = (next: RetryFlowState<TResult>) => {
    state = next;
    if (!cancelled()) options.onState(next);
  };
  /** Counts down whole seconds so the UI can show them; false if cancelled meanwhile. */
  const countDown = async (seconds: number, show: (secondsLeft: number) => void) => {
    for (let left = Math.max(1, Math.ceil(seconds)); left > 0; left--) {
      if (cancelled()) return false;
      show(left);
      await sleep(1000);
    }
    return !cancelled();
  };

  let attempt = 0;
  let networkFailures = 0;
  let conflictWaits = 0;
  for (;;) {
    if (cancelled()) return { phase: 'cancelled' };
    attempt++;
    emit({ phase: 'in_flight', attempt });
    const outcome = await options.send();
    if (cancelled()) return { phase: 'cancelled' };
    switch (outcome.kind) {
      case 'accepted':
        emit({ phase: 'accepted', result: outcome.result, replayed: outcome.replayed });
        return state;
      case 'in_use':
      case 'outcome_unknown': {
        networkFailures = 0;
        if (++conflictWaits > maxConflict) {
          emit({
            phase: 'outcome_unknown',
            attempts: attempt,
            detail: 'The same request is still running',
          });
          return state;
        }
        const phase = outcome.kind === 'in_use' ? 'conflict_waiting' : 'unknown_waiting';
        const ok = await countDown(outcome.retryAfterSeconds, (secondsLeft) =>
          emit({ phase, secondsLeft, attempt }),
        );
        if (!ok) return { phase: 'cancelled' };
        continue;
      }
      case 'network':
      case 'server_error': {
        networkFailures++;
        if (networkFailures >= maxNetwork) {
          emit({ phase: 'outcome_unknown', attempts: attempt, detail: outcome.detail });
          return state;
        }
        const seconds = backoff[Math.min(networkFailures, backoff.length) - 1] ?? 1;
        const ok = await countDown(seconds, (secondsLeft) =>
          emit({
            phase: 'network_retrying',
            secondsLeft,
            attempt,
            maxAttempts: maxNetwork,
            detail: outcome.detail,
          }),
        );
        if (!ok) return { phase: 'cancelled' };
        continue;
      }
      case 'key_reused':
        emit({ phase: 'key_reused' });
        return state;
      case 'store_unavailable':
        emit({ phase: 'store_unavailable', retryAfterSeconds: outcome.retryAfterSeconds });
        return state;
      case 'rate_limited':
        emit({ phase: 'rate_limited', retryAfterSeconds: outcome.retryAfterSeconds });
        return state;
      case 'unauthenticated':
        emit({ phase: 'unauthenticated' });
        return state;
      case 'rejected':
        emit({ phase: 'rejected', code: outcome.code, message: outcome.message });
        return state;
    }
  }
}
