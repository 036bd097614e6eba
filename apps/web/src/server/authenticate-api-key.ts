import type { Database } from '@once/api';
import { type AuthenticatedTenant, authenticateRequest } from '@once/api/auth';

/**
 * REST authentication: `Authorization: Bearer <api key>` only. Cookies are ignored on
 * purpose, so a browser's session can never be ridden into the REST API from another site.
 */
export function authenticateApiKey(db: Database, request: Request): Promise<AuthenticatedTenant> {
  const headers = new Headers();
  const authorization = request.headers.get('authorization');
  if (authorization !== null) headers.set('authorization', authorization);
  // The session secret is never consulted without a cookie; any non-empty value will do.
  return authenticateRequest({
    db,
    headers,
    sessionSecret: 'unused-without-a-cookie',
    now: new Date(),
  });
}
