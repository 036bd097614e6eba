import { idempotencyRateLimits } from '@once/db/schema';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { and, eq } from 'drizzle-orm';
import type { Queryable } from '../database.ts';

/**
 * How many sessions `session.start` may create per window (one minute when deployed): per
 * client address (every shopper or API-key attempt, refused ones included, so guessing an API
 * key is as slow as creating sessions) and per tenant (sessions created: a ceiling no spread of
 * addresses gets past). 0 turns a limit off. Operator-code attempts are counted per browser
 * instead (`OperatorCodeThrottle`): every demo client shares 127.0.0.1.
 */
export interface SessionStartLimits {
  perAddress: number;
  perTenant: number;
  /** Length of a window, ms; default 60 000. */
  windowMs?: number;
}

/** What a refused start is told: wait this long (until one more fits). */
export interface SessionStartRefusal {
  /** `browser` / `address`: operator-code attempts (`OperatorCodeThrottle`); else these. */
  limit: 'address' | 'tenant' | 'browser';
  retryAfterSeconds: number;
}

/**
 * A burst of `max`, then one per `windowMs / max` (a cell rate algorithm: over one `windowMs`
 * after a full burst, up to `2 * max - 1`; never more than `max` at once).
 */
export interface Allowance {
  max: number;
  windowMs: number;
}

/**
 * Limits every web process shares, kept by the idempotency library's sliding allowance (its
 * `countNewKey`: one conditional UPSERT per request on a row of `idempotency_rate_limits`,
 * timed by the database's clock as the statement takes the row, so attempts racing in one burst
 * are judged in the order they hold the row, whatever their process's clock). A limit's row is
 * (its scope, the thing limited) in the library's (tenant, principal): no tenant is named
 * after a scope. The worker's key reaper deletes the rows whose time is past. A database that
 * cannot be reached throws: the caller refuses (fails closed).
 */
export class RateLimits {
  private readonly store: ReturnType<typeof createDrizzleStore>;

  constructor(private readonly db: Queryable) {
    this.store = createDrizzleStore(db);
  }

  /** Counts one request of (scope, key): undefined when admitted, else seconds until one fits. */
  async admit(scope: string, key: string, { max, windowMs }: Allowance) {
    const count = await this.store.countNewKey(
      { tenantId: scope, principal: key },
      { maxNewKeys: max, windowMs },
    );
    return count.limited ? count.retryAfterSeconds : undefined;
  }

  /** Forgets (scope, key): its next request has the whole allowance again. */
  async reset(scope: string, key: string): Promise<void> {
    const row = idempotencyRateLimits;
    await this.db.delete(row).where(and(eq(row.tenantId, scope), eq(row.principal, key)));
  }
}

/** The session-start limits over {@link RateLimits}. */
export class SessionStartLimiter {
  private readonly rateLimits: RateLimits;
  private readonly windowMs: number;

  constructor(
    db: Queryable,
    private readonly limits: SessionStartLimits,
  ) {
    this.rateLimits = new RateLimits(db);
    this.windowMs = limits.windowMs ?? 60_000;
    for (const [name, value] of Object.entries({ ...limits, windowMs: this.windowMs })) {
      if (!Number.isSafeInteger(value) || value < 0 || (name === 'windowMs' && value < 1)) {
        throw new Error(`session start limit ${name} must be a whole number >= 0, got ${value}`);
      }
    }
  }

  /** Counts one attempt from `address`; a refusal when the address is over its limit. */
  admitAttempt(address: string): Promise<SessionStartRefusal | undefined> {
    return this.admit('session_start_address', address, this.limits.perAddress, 'address');
  }

  /** Counts one session about to be created for `tenantId`; a refusal over the ceiling. */
  admitSession(tenantId: string): Promise<SessionStartRefusal | undefined> {
    return this.admit('session_start_tenant', tenantId, this.limits.perTenant, 'tenant');
  }

  private async admit(
    scope: string,
    key: string,
    max: number,
    limit: SessionStartRefusal['limit'],
  ): Promise<SessionStartRefusal | undefined> {
    if (max === 0) return undefined;
    const wait = await this.rateLimits.admit(scope, key, { max, windowMs: this.windowMs });
    return wait === undefined ? undefined : { limit, retryAfterSeconds: wait };
  }
}
