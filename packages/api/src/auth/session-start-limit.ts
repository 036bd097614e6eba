import { runStatement } from '@once/postgres/sql';
import { sql } from 'drizzle-orm';
import type { Database } from '../database.ts';

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

/** Rows this far behind now are deleted now and then (a margin for webs' clocks apart). */
const IDLE_MS = 60_000;

/**
 * A burst of `max`, then one per `windowMs / max` (a cell rate algorithm: over one `windowMs`
 * after a full burst, up to `2 * max - 1`; never more than `max` at once).
 */
export interface Allowance {
  max: number;
  windowMs: number;
}

/**
 * Limits in PostgreSQL (`rate_limits`), so every web process counts against the same
 * allowance: a generic cell rate algorithm per (scope, key), one statement per request. Each
 * admitted request moves the key's theoretical arrival time one interval (window / max) on;
 * a request that would put it more than a window ahead of now is refused and moves nothing.
 * No fixed windows, so no boundary where twice the limit fits. Time is the caller's clock
 * (`nowMs`). A database that cannot be reached throws: the caller refuses (fails closed).
 */
export class RateLimits {
  private admitted = 0;

  constructor(private readonly db: Database) {}

  /** Counts one request of (scope, key): undefined when admitted, else seconds until one fits. */
  async admit(
    scope: string,
    key: string,
    { max, windowMs }: Allowance,
    nowMs: number,
  ): Promise<number | undefined> {
    const interval = windowMs / max;
    const [row] = await runStatement<{ admitted: boolean; tat_ms: number | string | null }>(
      this.db,
      sql`
      with attempt as (
        insert into rate_limits as r (scope, key, tat_ms)
        values (${scope}, ${key}, ${nowMs} + ${interval}::float8)
        on conflict (scope, key) do update
          set tat_ms = greatest(r.tat_ms, ${nowMs}) + ${interval}::float8
          where greatest(r.tat_ms, ${nowMs}) + ${interval}::float8 - ${nowMs} <= ${windowMs}
        returning tat_ms)
      select exists (select 1 from attempt) as admitted,
             (select tat_ms from rate_limits where scope = ${scope} and key = ${key}) as tat_ms`,
    );
    if (row?.admitted) {
      if (++this.admitted % 100 === 0) await this.forgetIdle(nowMs);
      return undefined;
    }
    // The row as this statement's snapshot saw it: enough to say roughly when one more fits.
    const waitMs = Number(row?.tat_ms ?? nowMs) + interval - windowMs - nowMs;
    return Math.max(1, Math.ceil(waitMs / 1000));
  }

  /** Forgets (scope, key): its next request has the whole allowance again. */
  async reset(scope: string, key: string): Promise<void> {
    await runStatement(
      this.db,
      sql`delete from rate_limits where scope = ${scope} and key = ${key}`,
    );
  }

  /** A row whose arrival time is past holds nothing back: its key starts afresh without it. */
  private async forgetIdle(nowMs: number): Promise<void> {
    await runStatement(this.db, sql`delete from rate_limits where tat_ms < ${nowMs - IDLE_MS}`);
  }
}

/** The session-start limits over {@link RateLimits}. */
export class SessionStartLimiter {
  private readonly rateLimits: RateLimits;
  private readonly windowMs: number;

  constructor(
    db: Database,
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
  admitAttempt(address: string, nowMs: number): Promise<SessionStartRefusal | undefined> {
    return this.admit('session_start_address', address, this.limits.perAddress, 'address', nowMs);
  }

  /** Counts one session about to be created for `tenantId`; a refusal over the ceiling. */
  admitSession(tenantId: string, nowMs: number): Promise<SessionStartRefusal | undefined> {
    return this.admit('session_start_tenant', tenantId, this.limits.perTenant, 'tenant', nowMs);
  }

  private async admit(
    scope: string,
    key: string,
    max: number,
    limit: SessionStartRefusal['limit'],
    nowMs: number,
  ): Promise<SessionStartRefusal | undefined> {
    if (max === 0) return undefined;
    const wait = await this.rateLimits.admit(scope, key, { max, windowMs: this.windowMs }, nowMs);
    return wait === undefined ? undefined : { limit, retryAfterSeconds: wait };
  }
}
