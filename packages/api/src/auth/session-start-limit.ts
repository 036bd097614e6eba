/**
 * How many sessions `session.start` may create, counted in fixed windows (one minute when
 * deployed): per client address (every shopper or API-key attempt, refused ones included, so
 * guessing an API key is as slow as creating sessions) and per tenant (sessions created: a
 * ceiling no spread of addresses gets past). 0 turns a limit off. Operator-code attempts are
 * counted per browser instead (`OperatorCodeThrottle`): every demo client shares 127.0.0.1.
 */
export interface SessionStartLimits {
  perAddress: number;
  perTenant: number;
  /** Length of a window, ms; default 60 000. */
  windowMs?: number;
}

/** What a refused start is told: wait this long (the window's end). */
export interface SessionStartRefusal {
  /** `browser` / `address`: wrong operator codes (`OperatorCodeThrottle`); else these counters. */
  limit: 'address' | 'tenant' | 'browser';
  retryAfterSeconds: number;
}

/**
 * The counters of one web process (sessions are stateless, so each process limits what it
 * issues; N processes admit N times the limit). Memory is bounded by the addresses seen within
 * one window: every counter is dropped when the window turns.
 *
 * @example
 * const limiter = new SessionStartLimiter({ perAddress: 60, perTenant: 600 });
 * limiter.admitAttempt('203.0.113.7', Date.now()); // undefined, or { limit: 'address', retryAfterSeconds }
 */
export class SessionStartLimiter {
  private windowStart = 0;
  private readonly attempts = new Map<string, number>();
  private readonly sessions = new Map<string, number>();
  private readonly windowMs: number;

  constructor(private readonly limits: SessionStartLimits) {
    this.windowMs = limits.windowMs ?? 60_000;
    for (const [name, value] of Object.entries({ ...limits, windowMs: this.windowMs })) {
      if (!Number.isSafeInteger(value) || value < 0 || (name === 'windowMs' && value < 1)) {
        throw new Error(`session start limit ${name} must be a whole number >= 0, got ${value}`);
      }
    }
  }

  /** Counts one attempt from `address`; a refusal when the address is over its limit. */
  admitAttempt(address: string, nowMs: number): SessionStartRefusal | undefined {
    return this.count(this.attempts, address, this.limits.perAddress, 'address', nowMs);
  }

  /** Counts one session about to be created for `tenantId`; a refusal over the ceiling. */
  admitSession(tenantId: string, nowMs: number): SessionStartRefusal | undefined {
    return this.count(this.sessions, tenantId, this.limits.perTenant, 'tenant', nowMs);
  }

  private count(
    counters: Map<string, number>,
    key: string,
    max: number,
    limit: SessionStartRefusal['limit'],
    nowMs: number,
  ): SessionStartRefusal | undefined {
    if (max === 0) return undefined;
    const windowStart = nowMs - (nowMs % this.windowMs);
    if (windowStart !== this.windowStart) {
      this.windowStart = windowStart;
      this.attempts.clear();
      this.sessions.clear();
    }
    const seen = (counters.get(key) ?? 0) + 1;
    // A refused attempt is not stored past the limit: the count stays bounded at max + 1.
    counters.set(key, Math.min(seen, max + 1));
    if (seen <= max) return undefined;
    return {
      limit,
      retryAfterSeconds: Math.max(1, Math.ceil((windowStart + this.windowMs - nowMs) / 1000)),
    };
  }
}
