import { tenants } from '@once/db/schema';
import { eq } from 'drizzle-orm';
import { findTenantByApiKey } from '../../auth/authenticate.ts';
import { operatorCodeMatches } from '../../auth/operator-code.ts';
import { type SessionRole, sessionSetCookie, signSessionValue } from '../../auth/session-cookie.ts';
import type { SessionStartLimiter, SessionStartRefusal } from '../../auth/session-start-limit.ts';
import type { Database } from '../../database.ts';
import { ApiError } from '../../errors/api-error.ts';
import type { SessionView, StartSessionInput } from './start.types.ts';

export interface StartSessionContext {
  db: Database;
  now: Date;
  sessionSecret: string;
  /** Whether `{ demoTenantId }` is accepted (demo deployments only). */
  allowDemoLogin: boolean;
  /** What `{ demoTenantId, role: 'operator' }` must give as `operatorCode`; unset refuses it. */
  operatorCode: string | undefined;
  /** Per-address and per-tenant counters; unset: unlimited. */
  sessionStartLimiter: SessionStartLimiter | undefined;
  /** The client's address key (`clientAddressKey`), what attempts are counted against. */
  clientAddress: string;
  /** Whether the request came over https (sets the cookie's Secure flag). */
  secure: boolean;
  resHeaders: Headers;
}

function rateLimited(refusal: SessionStartRefusal): ApiError {
  return new ApiError(
    'session_rate_limited',
    refusal.limit === 'address'
      ? `Too many sign-ins from this address; try again in ${refusal.retryAfterSeconds} s`
      : `Too many sign-ins for this merchant; try again in ${refusal.retryAfterSeconds} s`,
    { limit: refusal.limit, retryAfterSeconds: refusal.retryAfterSeconds },
  );
}

/**
 * Starts a browser session for a tenant by setting the signed `once_session` cookie: an
 * operator session for an API key, a demo session of the asked role (default `shopper`). A
 * demo OPERATOR session also needs the deployment's operator code (ONCE_OPERATOR_CODE, printed
 * by `npm run demo`): picking a merchant is no credential, and the cockpit reads every
 * shopper's e-mail and presses the chaos switches.
 *
 * Every attempt counts against the client address's allowance first (so guessing a code or a
 * key is as slow as minting sessions), each session created against the tenant's ceiling; a
 * refused start sets no cookie.
 *
 * @example
 * await startSession({ ctx, input: { demoTenantId: 'tenant_a', role: 'operator', operatorCode } });
 */
export async function startSession({
  ctx,
  input,
}: {
  ctx: StartSessionContext;
  input: StartSessionInput;
}): Promise<SessionView> {
  const nowMs = ctx.now.getTime();
  const overAddress = ctx.sessionStartLimiter?.admitAttempt(ctx.clientAddress, nowMs);
  if (overAddress) throw rateLimited(overAddress);
  let tenant: { id: string; name: string } | undefined;
  let role: SessionRole;
  if ('apiKey' in input) {
    // Whoever holds the merchant's API key is the merchant: an operator.
    role = 'operator';
    tenant = await findTenantByApiKey(ctx.db, input.apiKey);
    if (!tenant) throw new ApiError('invalid_credentials', 'Unknown API key');
  } else {
    if (!ctx.allowDemoLogin) throw new ApiError('demo_login_disabled');
    role = input.role ?? 'shopper';
    if (role === 'operator') {
      if (!ctx.operatorCode) throw new ApiError('demo_operator_login_disabled');
      if (!operatorCodeMatches(input.operatorCode, ctx.operatorCode)) {
        throw new ApiError('operator_code_invalid');
      }
    }
    [tenant] = await ctx.db
      .select({ id: tenants.id, name: tenants.name })
      .from(tenants)
      .where(eq(tenants.id, input.demoTenantId))
      .limit(1);
    if (!tenant) throw new ApiError('invalid_credentials', 'Unknown demo tenant');
  }
  const overTenant = ctx.sessionStartLimiter?.admitSession(tenant.id, nowMs);
  if (overTenant) throw rateLimited(overTenant);
  ctx.resHeaders.append(
    'set-cookie',
    sessionSetCookie(signSessionValue(tenant.id, ctx.sessionSecret, ctx.now, { role }), {
      secure: ctx.secure,
    }),
  );
  return { tenantId: tenant.id, tenantName: tenant.name, role };
}
