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

/** One attempt's place in the throttle: which record it counted against. */
export interface OperatorCodeAttempt {
  /** `browser`: its own record (the cookie); `address`: shared by cookieless attempts. */
  limit: 'browser' | 'address';
  key: string;
  /** The signed record of a browser given one now: set it as its cookie (`signInCookie`). */
  newRecordCookie?: string;
  /** Set when the record has no attempt left: refuse without comparing the code. */
  retryAfterSeconds?: number;
}

/**
 * Slows guessing of the operator code down for the guesser only. Every demo client is
 * 127.0.0.1, so a per-address count would let anyone on the machine lock the presenter out;
 * attempts are counted per browser instead, a record named in the `once_signin` cookie (a
 * random id signed with SESSION_SECRET, so every web knows the records any web gave). Each
 * record has 5 attempts in any 15 minutes (`rate_limits`, shared by all webs like the session
 * starts); an attempt past them is refused before the code is compared; the right code gives
 * the record its allowance back. A guesser who drops the cookie gets a new record only while
 * its address has new ones left (10 a minute), then shares the address's one record. The
 * presenter's browser keeps its own record whatever others send: once it has tried (or signed
 * in) it is never held up by anyone else's wrong codes.
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
    let browserId = input.cookie && verifySignedValue(input.cookie, this.secret);
    let newRecordCookie: string | undefined;
    if (!browserId) {
      const noneLeft = await this.rateLimits.admit(
        'operator_code_new_record',
        input.address,
        NEW_RECORDS,
        input.nowMs,
      );
      if (noneLeft === undefined) {
        browserId = randomBytes(18).toString('base64url');
        newRecordCookie = signValue(browserId, this.secret);
      }
    }
    const attempt: OperatorCodeAttempt = browserId
      ? { limit: 'browser', key: browserId, ...(newRecordCookie && { newRecordCookie }) }
      : { limit: 'address', key: input.address };
    const wait = await this.rateLimits.admit(
      `operator_code_${attempt.limit}`,
      attempt.key,
      ATTEMPTS,
      input.nowMs,
    );
    return wait === undefined ? attempt : { ...attempt, retryAfterSeconds: wait };
  }

  /** The right code: the record starts afresh. */
  succeeded(attempt: OperatorCodeAttempt): Promise<void> {
    return this.rateLimits.reset(`operator_code_${attempt.limit}`, attempt.key);
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
