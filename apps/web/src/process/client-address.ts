import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { CLIENT_ADDRESS_HEADER } from '@once/api/auth';

/**
 * Writes the client's address into {@link CLIENT_ADDRESS_HEADER} before Next sees the request,
 * replacing anything the client sent under that name: `session.start` counts attempts per
 * address, so the address must not be the caller's to choose.
 *
 * Without a proxy (`trustProxy` false, the default) it is the socket's peer. Next's own
 * `X-Forwarded-For` cannot serve: Next fills it only when the client did not send one. Behind a
 * reverse proxy every request comes from the proxy's address, so with ONCE_TRUST_PROXY=1 the
 * LAST entry of `X-Forwarded-For` is taken: the address the proxy itself saw (entries before it
 * are whatever the client claimed). Only set it when a proxy that appends to that header is the
 * one way in.
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
