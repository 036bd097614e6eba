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
  /** `browser` / `address`: wrong operator codes (`OperatorCodeThrottle`); else these counters. */
  limit: 'address' | 'tenant' | 'browser';
  retryAfterSeconds: number;
}

/** Rows idle for longer than this many windows are deleted now and then. */
const IDLE_WINDOWS = 2;

/**
 * The limits in PostgreSQL (`rate_limits`), so every web process counts against the same
 * allowance: a generic cell rate algorithm per (scope, key), one statement per request. Each
 * admitted request moves the key's theoretical arrival time one interval (window / limit) on;
 * a request that would put it more than a window ahead of now is refused and moves nothing.
 * A burst of `limit` fits at once, then one per interval: never twice the limit across a
 * minute's boundary, as fixed windows allowed. Time is the caller's clock (`nowMs`).
 */
export class SessionStartLimiter {
  private readonly windowMs: number;
  private admitted = 0;

  constructor(
    private readonly db: Database,
    private readonly limits: SessionStartLimits,
  ) {
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
    const interval = this.windowMs / max;
    const [row] = await runStatement<{ admitted: boolean; tat_ms: number | string | null }>(
      this.db,
      sql`
      with attempt as (
        insert into rate_limits as r (scope, key, tat_ms)
        values (${scope}, ${key}, ${nowMs} + ${interval}::float8)
        on conflict (scope, key) do update
          set tat_ms = greatest(r.tat_ms, ${nowMs}) + ${interval}::float8
          where greatest(r.tat_ms, ${nowMs}) + ${interval}::float8 - ${nowMs} <= ${this.windowMs}
        returning tat_ms)
      select exists (select 1 from attempt) as admitted,
             (select tat_ms from rate_limits where scope = ${scope} and key = ${key}) as tat_ms`,
    );
    if (row?.admitted) {
      if (++this.admitted % 100 === 0) await this.forgetIdle(nowMs);
      return undefined;
    }
    // The row as this statement's snapshot saw it: enough to say roughly when one more fits.
    const tatMs = Number(row?.tat_ms ?? nowMs);
    const waitMs = tatMs + interval - this.windowMs - nowMs;
    return { limit, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
  }

  /** Rows whose arrival time is long past hold nothing back: their keys start afresh. */
  private async forgetIdle(nowMs: number): Promise<void> {
    await runStatement(
      this.db,
      sql`delete from rate_limits
          where scope like 'session_start_%' and tat_ms < ${nowMs - IDLE_WINDOWS * this.windowMs}`,
    );
  }
}
