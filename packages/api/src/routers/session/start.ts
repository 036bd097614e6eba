import { hashApiKey } from '@once/db';
import { tenants } from '@once/db/schema';
import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { findTenantByApiKey } from '../../auth/authenticate.ts';
import { operatorCodeMatches } from '../../auth/operator-code.ts';
import { SIGN_IN_COOKIE_NAME, signInCookie } from '../../auth/operator-code-throttle.ts';
import {
  readCookie,
  type SessionRole,
  sessionSetCookie,
  signSessionValue,
} from '../../auth/session-cookie.ts';
import type { SessionStartRefusal } from '../../auth/session-start-limit.ts';
import type { Context } from '../../context.ts';
import { ApiError } from '../../errors/api-error.ts';

/**
 * Sign in with a tenant's API key (an operator session) or, in a demo deployment only, a demo
 * tenant and role; the tenant and role land in a signed cookie, never read from a later body.
 */
export const startSessionInput = z.union([
  z.object({ apiKey: z.string().min(1).max(200) }),
  z.object({
    demoTenantId: z.string().min(1).max(100),
    role: z.enum(['shopper', 'operator']).optional(),
    /** Required with `role: 'operator'`: the code `npm run demo` prints (ONCE_OPERATOR_CODE). */
    operatorCode: z.string().max(200).optional(),
  }),
]);

export interface SessionView {
  tenantId: string;
  tenantName: string;
  /** `shopper`: pays and reads its own payments; `operator`: also the cockpit (`ops.*`). */
  role: SessionRole;
}

type StartSessionContext = Pick<
  Context,
  | 'db'
  | 'sessionSecret'
  | 'allowDemoLogin'
  | 'operatorCode'
  | 'sessionStartLimiter'
  | 'operatorCodeThrottle'
  | 'operatorSessions'
  | 'headers'
  | 'secure'
  | 'resHeaders'
> & {
  now: Date;
  /** The client's address key (`clientAddressKey`), what attempts are counted against. */
  clientAddress: string;
};

const REFUSED_AS: Record<SessionStartRefusal['limit'], string> = {
  address: 'Too many sign-ins from this address',
  tenant: 'Too many sign-ins for this merchant',
  browser: 'Too many wrong operator codes from this browser',
};

function rateLimited(refusal: SessionStartRefusal): ApiError {
  return new ApiError(
    'session_rate_limited',
    `${REFUSED_AS[refusal.limit]}; try again in ${refusal.retryAfterSeconds} s`,
    { limit: refusal.limit, retryAfterSeconds: refusal.retryAfterSeconds },
  );
}

/**
 * Checks a demo operator's code against the browser's record: each attempt is counted before
 * the code is compared, one with no attempt left is refused uncompared (so waiting is not
 * skipped by guessing faster, on any web), and the right code clears the record. A browser
 * given a new record is told its cookie whatever the answer; on success `setRecordCookie`
 * (for the caller, after the session cookie) gives it its proven record.
 */
async function checkOperatorCode(
  ctx: StartSessionContext,
  given: string | undefined,
): Promise<{ setRecordCookie: () => void }> {
  const nowMs = ctx.now.getTime();
  const attempt = await ctx.operatorCodeThrottle.begin({
    cookie: readCookie(ctx.headers, SIGN_IN_COOKIE_NAME),
    address: ctx.clientAddress,
    nowMs,
  });
  const setRecordCookie = (value: string | undefined) => {
    if (value) ctx.resHeaders.append('set-cookie', signInCookie(value, { secure: ctx.secure }));
  };
  if (attempt.retryAfterSeconds !== undefined) {
    setRecordCookie(attempt.newRecordCookie);
    throw rateLimited({ limit: attempt.limit, retryAfterSeconds: attempt.retryAfterSeconds });
  }
  if (!operatorCodeMatches(given, ctx.operatorCode)) {
    setRecordCookie(attempt.newRecordCookie);
    throw new ApiError('operator_code_invalid');
  }
  const proven = await ctx.operatorCodeThrottle.succeeded(attempt, nowMs);
  return { setRecordCookie: () => setRecordCookie(proven) };
}

/**
 * Starts a browser session by setting the tenant's signed session cookie (a shopper's
 * `once_session`, an operator's `once_operator_session`, side by side in one browser): an
 * operator session for an API key, or a demo session of the asked role. A demo OPERATOR also
 * gives the deployment's operator code (ONCE_OPERATOR_CODE): picking a merchant is no
 * credential, and the cockpit reads every shopper's e-mail. Operator sessions are recorded on
 * the server (ended by sign-out or by rotating the API key that opened one).
 *
 * Shopper and API-key attempts count against the client address's allowance (guessing a key is
 * as slow as minting sessions), operator-code attempts against the browser's own record (no one
 * else's guesses lock the presenter out); each session against the tenant's ceiling. A refused
 * start sets no session cookie.
 */
export async function startSession(
  ctx: StartSessionContext,
  input: z.infer<typeof startSessionInput>,
): Promise<SessionView> {
  const byOperatorCode = !('apiKey' in input) && input.role === 'operator';
  if (!byOperatorCode) {
    const overAddress = await ctx.sessionStartLimiter?.admitAttempt(ctx.clientAddress);
    if (overAddress) throw rateLimited(overAddress);
  }
  let tenant: { id: string; name: string } | undefined;
  let role: SessionRole;
  let apiKeySha256: string | undefined;
  let codeChecked: { setRecordCookie: () => void } | undefined;
  if ('apiKey' in input) {
    // Whoever holds the merchant's API key is the merchant: an operator.
    role = 'operator';
    apiKeySha256 = hashApiKey(input.apiKey);
    tenant = await findTenantByApiKey(ctx.db, input.apiKey);
    if (!tenant) throw new ApiError('invalid_credentials', 'Unknown API key');
  } else {
    if (!ctx.allowDemoLogin) throw new ApiError('demo_login_disabled');
    role = input.role ?? 'shopper';
    if (role === 'operator') {
      if (!ctx.operatorCode) throw new ApiError('demo_operator_login_disabled');
      codeChecked = await checkOperatorCode(ctx, input.operatorCode);
    }
    [tenant] = await ctx.db
      .select({ id: tenants.id, name: tenants.name })
      .from(tenants)
      .where(eq(tenants.id, input.demoTenantId))
      .limit(1);
    if (!tenant) throw new ApiError('invalid_credentials', 'Unknown demo tenant');
  }
  const overTenant = await ctx.sessionStartLimiter?.admitSession(tenant.id);
  if (overTenant) throw rateLimited(overTenant);
  const sessionId =
    role === 'operator'
      ? (
          await ctx.operatorSessions.open({
            tenantId: tenant.id,
            credential: apiKeySha256 === undefined ? 'operator_code' : 'api_key',
            ...(apiKeySha256 === undefined ? {} : { apiKeySha256 }),
          })
        ).id
      : undefined;
  ctx.resHeaders.append(
    'set-cookie',
    sessionSetCookie(
      signSessionValue(tenant.id, ctx.sessionSecret, ctx.now, {
        role,
        ...(sessionId === undefined ? {} : { sessionId }),
      }),
      { secure: ctx.secure, role },
    ),
  );
  codeChecked?.setRecordCookie();
  return { tenantId: tenant.id, tenantName: tenant.name, role };
}
