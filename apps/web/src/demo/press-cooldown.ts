/**
 * "At most one press of this switch per N ms", for the demo's chaos switches: the web process
 * and the launcher each keep one. A refused press says how long to wait.
 *
 * @example
 * const cooldown = new PressCooldown();
 * cooldown.take('kill_worker', 10_000, Date.now()); // undefined: go ahead
 * cooldown.take('kill_worker', 10_000, Date.now()); // 9_999: wait that many ms
 */
export class PressCooldown {
  private readonly lastPress = new Map<string, number>();

  /**
   * Takes the press of `key` at `nowMs` when the last one is at least `cooldownMs` ago and
   * answers undefined; otherwise answers the ms left and records nothing.
   */
  take(key: string, cooldownMs: number, nowMs: number): number | undefined {
    const last = this.lastPress.get(key);
    if (last !== undefined && nowMs - last < cooldownMs) return last + cooldownMs - nowMs;
    this.lastPress.set(key, nowMs);
    return undefined;
  }

  /** Gives back a press that did nothing (the switch could not act), so it costs no wait. */
  release(key: string, nowMs: number): void {
    if (this.lastPress.get(key) === nowMs) this.lastPress.delete(key);
  }
}
