import { randomBytes } from 'node:crypto';

/** The cookie naming a browser's sign-in record: no credential, only whose wrong codes count. */
export const SIGN_IN_COOKIE_NAME = 'once_signin';
const SIGN_IN_COOKIE_MAX_AGE_SECONDS = 30 * 24 * 60 * 60;

/** How wrong operator codes are counted, as deployed. */
const DEFAULTS = {
  /** Wrong codes a browser may give before each further one doubles its wait (from 1 s). */
  freeFailures: 5,
  /** The longest wait one browser is given, ms. */
  maxDelayMs: 15 * 60_000,
  /** New sign-in records this process hands one client address per minute. */
  newBrowsersPerAddressPerMinute: 10,
  /** Records kept in memory; the oldest go first. */
  maxRecords: 10_000,
};
type OperatorCodeThrottleOptions = typeof DEFAULTS;

interface FailureRecord {
  failures: number;
  /** No code is even compared before this (ms). */
  blockedUntil: number;
}

/** One attempt's place in the throttle: which record it counts against. */
export interface OperatorCodeAttempt {
  record: FailureRecord;
  /** `browser`: its own record (the cookie); `address`: shared by cookieless attempts. */
  limit: 'browser' | 'address';
  /** A record minted for this browser: set its cookie (`signInCookie`). */
  mintedBrowserId?: string;
  /** Set when the record is waiting: refuse without comparing the code. */
  retryAfterSeconds?: number;
}

/**
 * Slows guessing of the operator code down for the guesser only. Every demo client is
 * 127.0.0.1, so a per-address count would let anyone on the machine lock the presenter out;
 * wrong codes are counted per browser instead, a record this process minted and named in the
 * `once_signin` cookie. Each record has a few free tries, then every wrong code doubles its
 * wait (1 s, 2 s, 4 s, ... up to `maxDelayMs`), during which nothing it sends is compared;
 * the right code clears it. A guesser who drops the cookie gets a new record only while its
 * address has new ones left this minute, then shares the address's one record, which slows
 * down the same way. The presenter's browser keeps its own record whatever others send: once
 * it has tried (or signed in) it is never held up by anyone else's wrong codes.
 *
 * Per process, in memory, as the other sign-in limits are.
 */
export class OperatorCodeThrottle {
  private readonly options: OperatorCodeThrottleOptions;
  private readonly browsers = new Map<string, FailureRecord>();
  private readonly addresses = new Map<string, FailureRecord>();
  private mintWindowStart = 0;
  private readonly minted = new Map<string, number>();

  constructor(options: Partial<OperatorCodeThrottleOptions> = {}) {
    this.options = { ...DEFAULTS, ...options };
  }

  /** The record an attempt counts against, minting one for a browser that has none. */
  begin(input: {
    browserId: string | undefined;
    address: string;
    nowMs: number;
  }): OperatorCodeAttempt {
    const known = input.browserId === undefined ? undefined : this.browsers.get(input.browserId);
    if (known) return this.attemptOf(known, 'browser', input.nowMs);
    const mintedBrowserId = this.mint(input.address, input.nowMs);
    if (mintedBrowserId) {
      return {
        ...this.attemptOf(this.browsers.get(mintedBrowserId)!, 'browser', input.nowMs),
        mintedBrowserId,
      };
    }
    let shared = this.addresses.get(input.address);
    if (!shared) {
      shared = { failures: 0, blockedUntil: 0 };
      keepBounded(this.addresses, input.address, shared, this.options.maxRecords);
    }
    return this.attemptOf(shared, 'address', input.nowMs);
  }

  /** A wrong code: past the free ones, the record waits twice as long as last time. */
  failed(attempt: OperatorCodeAttempt, nowMs: number): void {
    const record = attempt.record;
    record.failures += 1;
    const over = record.failures - this.options.freeFailures;
    if (over > 0) {
      record.blockedUntil =
        nowMs + Math.min(1000 * 2 ** Math.min(over - 1, 30), this.options.maxDelayMs);
    }
  }

  /** The right code: the record starts afresh. */
  succeeded(attempt: OperatorCodeAttempt): void {
    attempt.record.failures = 0;
    attempt.record.blockedUntil = 0;
  }

  private attemptOf(
    record: FailureRecord,
    limit: OperatorCodeAttempt['limit'],
    nowMs: number,
  ): OperatorCodeAttempt {
    if (record.blockedUntil <= nowMs) return { record, limit };
    return { record, limit, retryAfterSeconds: Math.ceil((record.blockedUntil - nowMs) / 1000) };
  }

  private mint(address: string, nowMs: number): string | undefined {
    const windowStart = nowMs - (nowMs % 60_000);
    if (windowStart !== this.mintWindowStart) {
      this.mintWindowStart = windowStart;
      this.minted.clear();
    }
    const count = this.minted.get(address) ?? 0;
    if (count >= this.options.newBrowsersPerAddressPerMinute) return undefined;
    this.minted.set(address, count + 1);
    const id = randomBytes(18).toString('base64url');
    keepBounded(this.browsers, id, { failures: 0, blockedUntil: 0 }, this.options.maxRecords);
    return id;
  }
}

/** Adds `value`; past `max` entries the oldest is dropped (a dropped browser mints anew). */
function keepBounded<V>(map: Map<string, V>, key: string, value: V, max: number) {
  map.set(key, value);
  if (map.size > max) map.delete(map.keys().next().value!);
}

/**
 * The `Set-Cookie` of a browser's sign-in record: HttpOnly, SameSite=Strict, only for the API,
 * kept for 30 days so the presenter's browser keeps its record across sign-outs.
 */
export function signInCookie(browserId: string, options: { secure: boolean }): string {
  return [
    `${SIGN_IN_COOKIE_NAME}=${browserId}`,
    'Path=/api/trpc',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${SIGN_IN_COOKIE_MAX_AGE_SECONDS}`,
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}
