import type { IncomingMessage, ServerResponse } from 'node:http';
import { API_PROBLEM_TYPE_BASE, apiErrorCatalogue } from '@once/api/errors';
import { HOST_NOT_ALLOWED, hostAllowed } from '@once/env';

/**
 * Answers a request whose `Host` is not one of this server's names with 403 `host_not_allowed`
 * (problem+json, as every REST refusal) and says so; the caller then passes it on no further.
 * This is what keeps a DNS-rebinding page the presenter opens from reaching the checkout, the
 * cockpit or the API through the presenter's own browser (see `hostAllowed` for the names).
 */
export function refuseForeignHost(
  request: IncomingMessage,
  response: ServerResponse,
  allowedHostNames: readonly string[],
): boolean {
  if (hostAllowed(request.headers.host, allowedHostNames)) return false;
  const { status, title } = apiErrorCatalogue.host_not_allowed;
  response.writeHead(status, { 'content-type': 'application/problem+json', connection: 'close' });
  response.end(
    JSON.stringify({
      type: `${API_PROBLEM_TYPE_BASE}${HOST_NOT_ALLOWED}`,
      title,
      status,
      code: HOST_NOT_ALLOWED,
      detail: `Use this server's address, localhost, or a name in WEB_PUBLIC_URL / ONCE_ALLOWED_HOSTS (got Host ${JSON.stringify(request.headers.host ?? '')})`,
    }),
  );
  return true;
}
