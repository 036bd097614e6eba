/** "At most one press of this switch per N ms"; the web process and the launcher keep one each. */
export class PressCooldown {
  private readonly lastPress = new Map<string, number>();

  /** Undefined when the press is taken; otherwise the ms left, and nothing is recorded. */
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
