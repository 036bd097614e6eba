export interface BackoffPolicy {
  /** Delay before the second attempt. */
  baseMs: number;
  /** Cap, so a long outage does not push retries hours out. */
  maxMs: number;
}

/**
 * Delay before retrying after `attempt` attempts failed ambiguously: exponential, capped,
 * with "full jitter" (a uniform draw in [delay/2, delay]) so workers that failed together
 * do not retry together and hammer a recovering processor in lockstep.
 *
 * @example
 * backoffDelayMs(1, { baseMs: 500, maxMs: 30_000 }); // between 250 and 500
 * backoffDelayMs(4, { baseMs: 500, maxMs: 30_000 }); // between 2000 and 4000
 */
export function backoffDelayMs(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, attempt - 1);
  // 2 ** exponent overflows to Infinity for huge attempts; Math.min caps it either way.
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
