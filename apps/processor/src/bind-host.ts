import { isIP } from 'node:net';

/** Every interface: reachable from other containers and hosts, and from this machine. */
export const DEFAULT_BIND_HOST = '0.0.0.0';

/**
 * The address a server listens on, from `HOST`-style variables. Only IP literals are taken:
 * a name would be resolved once at start and could silently bind somewhere unexpected. The
 * default, 0.0.0.0, works both on a laptop (reach it as 127.0.0.1) and in a container, where
 * 127.0.0.1 is the container's own loopback and nobody else could connect.
 *
 * @example
 * readBindHost(process.env, 'HOST'); // '0.0.0.0' unless HOST is set
 */
export function readBindHost(env: NodeJS.ProcessEnv, name: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return DEFAULT_BIND_HOST;
  if (isIP(raw) === 0) {
    throw new Error(
      `${name} must be an IP address to listen on (0.0.0.0: every interface, 127.0.0.1: this machine only), got ${JSON.stringify(raw)}`,
    );
  }
  return raw;
}
