import { type Database, hashApiKey } from '@once/db';
import { tenants } from '@once/db/schema';
import { eq } from 'drizzle-orm';
import { CheckoutError } from '../errors/checkout-error.ts';
import { readCookie, SESSION_COOKIE_NAME, verifySessionValue } from './session-cookie.ts';

/** Who is calling: always a tenant, proven by an API key or a signed session cookie. */
export interface AuthenticatedTenant {
  tenantId: string;
  tenantName: string;
  method: 'api_key' | 'session';
}

/** The tenant owning an API key, or undefined. Keys are stored only as SHA-256. */
export async function findTenantByApiKey(db: Database, apiKey: string) {
  const [row] = await db
    .select({ id: tenants.id, name: tenants.name })
    .from(tenants)
    .where(eq(tenants.apiKeySha256, hashApiKey(apiKey)))
    .limit(1);
  return row;
}

/**
 * Resolves the calling tenant from `Authorization: Bearer <api key>` (servers, REST) or the
 * `once_session` cookie (the browser). The body is never consulted: a client cannot name
 * the tenant it acts for. A present-but-wrong credential is refused, never ignored in
 * favour of the other one.
 *
 * @example
 * const who = await authenticateRequest({ db, headers: req.headers, sessionSecret, now: new Date() });
 */
export async function authenticateRequest(input: {
  db: Database;
  headers: Headers;
  sessionSecret: string;
  now: Date;
}): Promise<AuthenticatedTenant> {
  const authorization = input.headers.get('authorization');
  if (authorization !== null) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw new CheckoutError('invalid_credentials', 'Malformed Authorization header');
    const tenant = await findTenantByApiKey(input.db, match[1]!);
    if (!tenant) throw new CheckoutError('invalid_credentials', 'Unknown API key');
    return { tenantId: tenant.id, tenantName: tenant.name, method: 'api_key' };
  }
  const cookie = readCookie(input.headers, SESSION_COOKIE_NAME);
  if (cookie !== undefined) {
    const tenantId = verifySessionValue(cookie, input.sessionSecret, input.now);
    if (tenantId === undefined) {
      throw new CheckoutError('invalid_credentials', 'Session expired or invalid');
    }
    const [tenant] = await input.db
      .select({ id: tenants.id, name: tenants.name })
      .from(tenants)
      .where(eq(tenants.id, tenantId))
      .limit(1);
    if (!tenant) throw new CheckoutError('invalid_credentials', 'Session names no tenant');
    return { tenantId: tenant.id, tenantName: tenant.name, method: 'session' };
  }
  throw new CheckoutError('unauthenticated');
}
