import { exponentialDelayMs } from '@once/backoff';

/**
 * When a supervised part dies, the launcher starts it again after a delay that doubles with
 * each crash in a row (from `initialDelayMs` up to `maxDelayMs`) and resets once the part
 * stayed up for `resetAfterMs`; it gives up on a crash loop: more than `maxRestarts` restarts
 * within `windowMs`. docker-compose's `restart: unless-stopped`, except that Docker retries a
 * crash loop forever, where a presenter's terminal says so and stops.
 */
export interface RestartPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  maxRestarts: number;
  windowMs: number;
  resetAfterMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 15_000,
  maxRestarts: 5,
  windowMs: 60_000,
  resetAfterMs: 30_000,
};

/** What to do about one part's latest exit. */
export type RestartDecision =
  | { restart: true; delayMs: number; restartsInWindow: number }
  | { restart: false; restartsInWindow: number };

/** One part's recent exits, and for each new one whether to restart and after how long. */
export class RestartHistory {
  private exits: number[] = [];
  private inARow = 0;

  constructor(private readonly policy: RestartPolicy) {}

  /** `upForMs`: how long the part ran before this exit. */
  decide(now: number, upForMs: number): RestartDecision {
    if (upForMs >= this.policy.resetAfterMs) this.inARow = 0;
    this.exits = this.exits.filter((t) => now - t < this.policy.windowMs);
    this.exits.push(now);
    const restartsInWindow = this.exits.length;
    if (restartsInWindow > this.policy.maxRestarts) return { restart: false, restartsInWindow };
    const delayMs = exponentialDelayMs(this.inARow + 1, {
      baseMs: this.policy.initialDelayMs,
      maxMs: this.policy.maxDelayMs,
    });
    this.inARow++;
    return { restart: true, delayMs, restartsInWindow };
  }
}
