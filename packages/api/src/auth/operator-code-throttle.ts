import { randomBytes } from 'node:crypto';
import type { Database } from '../database.ts';
import { signValue, verifySignedValue } from './session-cookie.ts';
import { type Allowance, RateLimits } from './session-start-limit.ts';

/** The cookie naming a browser's sign-in record: no credential, only whose wrong codes count. */
export const SIGN_IN_COOKIE_NAME = 'once_signin';
const SIGN_IN_COOKIE_MAX_AGE_SECONDS = 30 * 24 * 60 * 60;

/** Operator-code attempts one record may make: 5 at once, then one every 3 minutes. */
const ATTEMPTS: Allowance = { max: 5, windowMs: 15 * 60_000 };
/** New sign-in records one client address is given: 10 at once, then one every 6 seconds. */
const NEW_RECORDS: Allowance = { max: 10, windowMs: 60_000 };
/**
 * How long a record is honoured: one that never gave the right code only as long as its
 * allowance's window (so a guesser who keeps every record it is given holds about 160);
 * one that did, as long as its cookie.
 */
const RECORD_LIFETIME_MS = {
  new: ATTEMPTS.windowMs,
  proven: SIGN_IN_COOKIE_MAX_AGE_SECONDS * 1000,
};

/** One attempt's place in the throttle: which record it counted against. */
export interface OperatorCodeAttempt {
  /** `browser`: its own record (the cookie); `address`: shared by cookieless attempts. */
  limit: 'browser' | 'address';
  key: string;
  /** A record given to this browser now: set it as its cookie (`signInCookie`). */
  newRecordCookie?: string;
  /** Set when the record has no attempt left: refuse without comparing the code. */
  retryAfterSeconds?: number;
}

/**
 * Slows guessing of the operator code down for the guesser only. Every demo client is
 * 127.0.0.1, so a per-address count would let anyone on the machine lock the presenter out;
 * attempts are counted per browser instead, a record named in the `once_signin` cookie (a
 * random id and its expiry signed with SESSION_SECRET, so every web knows the records any web
 * gave). Each record has 5 attempts at once, then one every 3 minutes (`RateLimits`, shared by
 * all webs like the session starts); an attempt past them is refused before the code is compared; the right
 * code gives the record its allowance back and makes it last 30 days. A guesser who drops the
 * cookie gets a new record only while its address has new ones left (10 a minute), then
 * shares the address's one record. The presenter's browser keeps its own record whatever
 * others send: once it has signed in (or tried, in the last 15 minutes) it is never held up by
 * anyone else's codes.
 */
export class OperatorCodeThrottle {
  private readonly rateLimits: RateLimits;

  constructor(
    db: Database,
    private readonly secret: string,
  ) {
    this.rateLimits = new RateLimits(db);
  }

  /** Counts one attempt against the browser's record (minting one if it has none). */
  async begin(input: {
    cookie: string | undefined;
    address: string;
    nowMs: number;
  }): Promise<OperatorCodeAttempt> {
    let browserId = this.recordOf(input.cookie, input.nowMs);
    let newRecordCookie: string | undefined;
    if (!browserId) {
      const noneLeft = await this.rateLimits.admit(
        'operator_code_new_record',
        input.address,
        NEW_RECORDS,
      );
      if (noneLeft === undefined) {
        browserId = randomBytes(18).toString('base64url');
        newRecordCookie = this.recordCookie(browserId, input.nowMs + RECORD_LIFETIME_MS.new);
      }
    }
    const attempt: OperatorCodeAttempt = browserId
      ? { limit: 'browser', key: browserId, ...(newRecordCookie && { newRecordCookie }) }
      : { limit: 'address', key: input.address };
    const wait = await this.rateLimits.admit(
      `operator_code_${attempt.limit}`,
      attempt.key,
      ATTEMPTS,
    );
    return wait === undefined ? attempt : { ...attempt, retryAfterSeconds: wait };
  }

  /** The right code: the record starts afresh; the browser's proven record (a cookie value). */
  async succeeded(attempt: OperatorCodeAttempt, nowMs: number): Promise<string> {
    await this.rateLimits.reset(`operator_code_${attempt.limit}`, attempt.key);
    const browserId =
      attempt.limit === 'browser' ? attempt.key : randomBytes(18).toString('base64url');
    return this.recordCookie(browserId, nowMs + RECORD_LIFETIME_MS.proven);
  }

  private recordCookie(browserId: string, expiresMs: number): string {
    return signValue(`${browserId}.${Math.ceil(expiresMs / 1000)}`, this.secret);
  }

  /** The browser id of a record cookie this deployment signed and that has not expired. */
  private recordOf(cookie: string | undefined, nowMs: number): string | undefined {
    const [id, expires] = (cookie && verifySignedValue(cookie, this.secret))?.split('.') ?? [];
    return id && Number(expires) * 1000 > nowMs ? id : undefined;
  }
}

/**
 * The `Set-Cookie` of a browser's sign-in record: HttpOnly, SameSite=Strict, only for the API,
 * kept for 30 days so the presenter's browser keeps its record across sign-outs.
 */
export function signInCookie(value: string, options: { secure: boolean }): string {
  return [
    `${SIGN_IN_COOKIE_NAME}=${value}`,
    'Path=/api/trpc',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${SIGN_IN_COOKIE_MAX_AGE_SECONDS}`,
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}
