import { isIPv6 } from 'node:net';

/**
 * The request header carrying the client's address to the API. The web's own server
 * (`apps/web/src/process/main.ts`) sets it on every request from the socket (or, with
 * ONCE_TRUST_PROXY=1, from the proxy's `X-Forwarded-For`) and overwrites whatever a client
 * sent under that name, so behind it the value cannot be chosen by the caller.
 */
export const CLIENT_ADDRESS_HEADER = 'x-once-client-address';

/**
 * The address `session.start` counts attempts against: IPv4 as it is, an IPv4-mapped IPv6
 * address as its IPv4, any other IPv6 address by its /64 (one host usually holds a whole /64,
 * so counting single addresses would give it 2^64 allowances). `unknown` without the header
 * (an in-process caller, `next dev`): those share one allowance.
 */
export function clientAddressKey(headers: Headers): string {
  const address = headers.get(CLIENT_ADDRESS_HEADER)?.trim();
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, '::' expanded, leading zeros dropped. */
function expandIPv6(address: string): string[] {
  const [head = '', tail] = address.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...(tail === undefined ? [] : zeros), ...right].map((group) =>
    (Number.parseInt(group, 16) || 0).toString(16),
  );
}
