import { tenants } from '@once/db/schema';
import { eq } from 'drizzle-orm';
import { findTenantByApiKey } from '../../auth/authenticate.ts';
import { type SessionRole, sessionSetCookie, signSessionValue } from '../../auth/session-cookie.ts';
import type { Database } from '../../database.ts';
import { ApiError } from '../../errors/api-error.ts';
import type { SessionView, StartSessionInput } from './start.types.ts';

export interface StartSessionContext {
  db: Database;
  now: Date;
  sessionSecret: string;
  /** Whether `{ demoTenantId }` is accepted (demo deployments only). */
  allowDemoLogin: boolean;
  /** Whether the request came over https (sets the cookie's Secure flag). */
  secure: boolean;
  resHeaders: Headers;
}

/**
 * Starts a browser session for a tenant by setting the signed `once_session` cookie: an
 * operator session for an API key, a demo session of the asked role (default `shopper`).
 *
 * @example
 * await startSession({ ctx, input: { demoTenantId: 'tenant_a', role: 'operator' } });
 */
export async function startSession({
  ctx,
  input,
}: {
  ctx: StartSessionContext;
  input: StartSessionInput;
}): Promise<SessionView> {
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
    [tenant] = await ctx.db
      .select({ id: tenants.id, name: tenants.name })
      .from(tenants)
      .where(eq(tenants.id, input.demoTenantId))
      .limit(1);
    if (!tenant) throw new ApiError('invalid_credentials', 'Unknown demo tenant');
  }
  ctx.resHeaders.append(
    'set-cookie',
    sessionSetCookie(signSessionValue(tenant.id, ctx.sessionSecret, ctx.now, { role }), {
      secure: ctx.secure,
    }),
  );
  return { tenantId: tenant.id, tenantName: tenant.name, role };
}
