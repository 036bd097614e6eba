import { type Database, hashApiKey } from '@once/db';
import { tenants } from '@once/db/schema';
import { eq } from 'drizzle-orm';
import { ApiError } from '../errors/api-error.ts';
import type { OperatorSessions } from './operator-sessions.ts';
import { readSessionCookie, type SessionRole, verifySessionValue } from './session-cookie.ts';
import type { SessionTenants } from './session-tenants.ts';

/**
 * Who is calling: always a tenant, proven by an API key or a signed session cookie, with the
 * caller's role in it and the principal (this session, this API key) acting for it.
 */
export interface AuthenticatedTenant {
  tenantId: string;
  tenantName: string;
  method: 'api_key' | 'session';
  /** The merchant's API key is an operator credential; a session carries its own role. */
  role: SessionRole;
  /**
   * Whether the deployment's operator code signed this session in: only then may it press the
   * demo's chaos switches (an API key, or a session it opened, reads the cockpit and moves
   * money, but stops no process).
   */
  operatorCodeProven: boolean;
  /**
   * `session:<session id>` or `api_key:<first 16 hex of its SHA-256>`: whose new-key allowance
   * a request spends, and who placed a payment (a shopper reads only its own).
   */
  principal: string;
}

/** The tenant owning an API key, or undefined. Keys are stored only as SHA-256. */
export function findTenantByApiKey(db: Database, apiKey: string) {
  return findTenantByApiKeyHash(db, hashApiKey(apiKey));
}

async function findTenantByApiKeyHash(db: Database, apiKeySha256: string) {
  const [row] = await db
    .select({ id: tenants.id, name: tenants.name })
    .from(tenants)
    .where(eq(tenants.apiKeySha256, apiKeySha256))
    .limit(1);
  return row;
}

/**
 * The tenant of `Authorization: Bearer <api key>`, the one credential of the REST and GraphQL
 * APIs; no header is `unauthenticated`. Cookies are ignored on purpose, so a browser's session
 * can never be ridden into those APIs from another site.
 */
export async function authenticateApiKey(
  db: Database,
  authorization: string | null,
): Promise<AuthenticatedTenant> {
  if (authorization === null) throw new ApiError('unauthenticated');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) throw new ApiError('invalid_credentials', 'Malformed Authorization header');
  const apiKeySha256 = hashApiKey(match[1]!);
  const tenant = await findTenantByApiKeyHash(db, apiKeySha256);
  if (!tenant) throw new ApiError('invalid_credentials', 'Unknown API key');
  return {
    tenantId: tenant.id,
    tenantName: tenant.name,
    method: 'api_key',
    role: 'operator',
    operatorCodeProven: false,
    principal: `api_key:${apiKeySha256.slice(0, 16)}`,
  };
}

/**
 * Resolves the calling tenant from `Authorization: Bearer <api key>` (servers, REST) or the
 * session cookie the page asks for (the browser: `readSessionCookie`). The body is never consulted: a client cannot name
 * the tenant it acts for. A present-but-wrong credential is refused, never ignored in
 * favour of the other one. A session's tenant comes from `sessionTenants` (see there why a
 * known one needs no database read); an operator session must also be open in
 * `operatorSessions` (not signed out, its API key not rotated, within its 8 hours), as the
 * database says, or with `sessionFromMemory` as this process last saw it when the database
 * cannot say (only for what needs no database: see `OperatorSessions`).
 */
export async function authenticateRequest(input: {
  db: Database;
  headers: Headers;
  sessionSecret: string;
  sessionTenants: SessionTenants;
  operatorSessions: OperatorSessions;
  clock: { now(): Date };
  sessionFromMemory?: boolean;
}): Promise<AuthenticatedTenant> {
  const authorization = input.headers.get('authorization');
  if (authorization !== null) return authenticateApiKey(input.db, authorization);
  const cookie = readSessionCookie(input.headers)?.value;
  if (cookie !== undefined) {
    const claims = verifySessionValue(cookie, input.sessionSecret, input.clock.now());
    if (claims === undefined) {
      throw new ApiError('invalid_credentials', 'Session expired or invalid');
    }
    const operatorSession =
      claims.role === 'operator'
        ? await input.operatorSessions.find(claims.tenantId, claims.sessionId, {
            orFromMemory: input.sessionFromMemory,
          })
        : undefined;
    if (claims.role === 'operator' && !operatorSession) {
      throw new ApiError('invalid_credentials', 'Session ended or expired');
    }
    const tenant = await input.sessionTenants.find(claims.tenantId);
    if (!tenant) throw new ApiError('invalid_credentials', 'Session names no tenant');
    return {
      tenantId: tenant.id,
      tenantName: tenant.name,
      method: 'session',
      role: claims.role,
      operatorCodeProven: operatorSession?.credential === 'operator_code',
      principal: `session:${claims.sessionId}`,
    };
  }
  throw new ApiError('unauthenticated');
}
