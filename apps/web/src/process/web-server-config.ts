import { isIP } from 'node:net';

/** Where the web server listens. */
export interface WebServerConfig {
  /** `HOST`, default 0.0.0.0: reachable as localhost on a laptop and from other containers. */
  host: string;
  /** `PORT`, default 3000. */
  port: number;
}

/**
 * Reads and checks `HOST` and `PORT` once at start. Only IP literals are taken for `HOST`
 * (a name would be resolved once and could bind somewhere unexpected); `HOSTNAME` is not
 * read on purpose: Docker sets it to the container's id.
 *
 * @example
 * readWebServerConfig({ HOST: '127.0.0.1', PORT: '3000' }); // { host: '127.0.0.1', port: 3000 }
 */
export function readWebServerConfig(env: Record<string, string | undefined>): WebServerConfig {
  const host = env.HOST || '0.0.0.0';
  if (isIP(host) === 0) {
    throw new Error(
      `HOST must be an IP address to listen on (0.0.0.0: every interface, 127.0.0.1: this machine only), got ${JSON.stringify(host)}`,
    );
  }
  const rawPort = env.PORT || '3000';
  const port = Number(rawPort);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new Error(`PORT must be an integer from 0 to 65535, got ${JSON.stringify(rawPort)}`);
  }
  return { host, port };
}
