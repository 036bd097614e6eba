/** A capped exponential schedule: `baseMs`, `2 * baseMs`, `4 * baseMs`, ... never above `maxMs`. */
export interface BackoffPolicy {
  /** Delay after the first failure. */
  baseMs: number;
  /** Cap, so a long outage does not push retries hours out. */
  maxMs: number;
}

/**
 * The delay after `attempt` failures in a row (1-based), without jitter:
 * `min(maxMs, baseMs * 2^(attempt - 1))`. For retries nobody else makes at the same moment
 * (one process restarting a crashed child, one connection retrying a query). An `attempt` of
 * `Infinity` gives the cap.
 *
 * @example
 * exponentialDelayMs(1, { baseMs: 500, maxMs: 15_000 }); // 500
 * exponentialDelayMs(4, { baseMs: 500, maxMs: 15_000 }); // 4000
 * exponentialDelayMs(9, { baseMs: 500, maxMs: 15_000 }); // 15000
 */
export function exponentialDelayMs(attempt: number, policy: BackoffPolicy): number {
  const exponent = Math.max(0, attempt - 1);
  // 2 ** exponent overflows to Infinity for huge attempts; Math.min caps it either way.
  return Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
}

/**
 * The delay after `attempt` failures in a row with EQUAL jitter: a uniform draw in
 * `[d/2, d]` where `d = exponentialDelayMs(attempt, policy)`, rounded to a millisecond.
 * Equal, not full, jitter (full jitter draws in `[0, d]`): retries that failed together
 * spread out, yet none comes back sooner than half the schedule, so a recovering processor
 * gets at least that long. For many workers retrying the same dependency.
 *
 * @example
 * equalJitterDelayMs(1, { baseMs: 500, maxMs: 30_000 }); // between 250 and 500
 * equalJitterDelayMs(4, { baseMs: 500, maxMs: 30_000 }); // between 2000 and 4000
 */
export function equalJitterDelayMs(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const ceiling = exponentialDelayMs(attempt, policy);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
