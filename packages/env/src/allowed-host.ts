import { isIP } from 'node:net';

/** The stable code of a request refused for its `Host` header, on every server that checks it. */
export const HOST_NOT_ALLOWED = 'host_not_allowed';

/** The hostname of a `Host` header (`name:port`, `[v6]:port`), lower-cased; undefined if malformed. */
function hostnameOf(host: string): string | undefined {
  const bracketed = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/i.exec(host);
  if (bracketed) return bracketed[1]!.toLowerCase();
  const plain = /^([a-z0-9.-]+)(?::\d{1,5})?$/i.exec(host);
  return plain?.[1]?.toLowerCase().replace(/\.$/, '');
}

/**
 * Whether a server should answer a request that names `host` (its `Host` header): the guard
 * against DNS rebinding, where a page on an attacker's name re-resolves that name to this
 * server's address and so reaches a server on loopback or a private network from the victim's
 * browser. Such a request still carries the attacker's name, so a server answers only to:
 *
 * - an IP literal (the browser was pointed at the address itself; no name was rebound);
 * - `localhost`;
 * - a name without a dot (a container or host name on a private network, such as compose's
 *   `web` and `processor`: no public DNS answers it);
 * - a name it was configured with (`publicNames`: its public URL's host, ONCE_ALLOWED_HOSTS).
 *
 * A missing or malformed header is refused.
 */
export function hostAllowed(host: string | undefined, publicNames: readonly string[]): boolean {
  if (!host) return false;
  const name = hostnameOf(host.trim());
  if (name === undefined || name === '') return false;
  if (isIP(name) !== 0) return true;
  if (name === 'localhost' || !name.includes('.')) return true;
  return publicNames.some((allowed) => allowed.toLowerCase().replace(/\.$/, '') === name);
}

/**
 * The names a server was configured with: the hostnames of `urls` (unset or unparsable ones
 * skipped) and a comma-separated list of names (ONCE_ALLOWED_HOSTS).
 */
export function configuredHostNames(
  urls: readonly (string | undefined)[],
  names: string | undefined,
): string[] {
  const fromUrls = urls.flatMap((url) => {
    if (!url) return [];
    try {
      return [new URL(url).hostname.replace(/^\[|\]$/g, '')];
    } catch {
      return [];
    }
  });
  const listed = (names ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  return [...fromUrls, ...listed];
}
