import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { CLIENT_ADDRESS_HEADER } from '@once/api/auth';

/**
 * Writes the client's address into {@link CLIENT_ADDRESS_HEADER}, replacing whatever the client
 * sent under that name: `session.start` counts attempts per address, so it must not be the
 * caller's to choose. It is the socket's peer (Next fills `X-Forwarded-For` only when the client
 * sent none); with ONCE_TRUST_PROXY=1 it is the LAST `X-Forwarded-For` entry, the one the proxy
 * itself saw; set that only when such a proxy is the one way in.
 */
export function stampClientAddress(request: IncomingMessage, trustProxy: boolean): void {
  const forwarded = trustProxy ? lastForwardedFor(request.headers['x-forwarded-for']) : undefined;
  const address = forwarded ?? request.socket.remoteAddress;
  if (address) request.headers[CLIENT_ADDRESS_HEADER] = address;
  else delete request.headers[CLIENT_ADDRESS_HEADER];
}

function lastForwardedFor(header: string | string[] | undefined): string | undefined {
  const joined = Array.isArray(header) ? header.join(',') : header;
  const last = joined?.split(',').at(-1)?.trim();
  return last && isIP(last) !== 0 ? last : undefined;
}
