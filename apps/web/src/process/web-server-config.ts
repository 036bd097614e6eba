import { bindHost, integer, parseEnv, wholeNumber } from '@once/env';

/** The web process's listening address, validated at start. */
const webServerEnv = {
  HOST: bindHost(),
  PORT: integer({ default: 3000, min: 0, max: 65_535 }),
  ONCE_TRUST_PROXY: wholeNumber({
    default: 0,
    min: 0,
    max: 1,
    describe: '0 (the client is the socket peer, the default) or 1 (behind a reverse proxy)',
  }),
};

/** Where the web server listens. */
export interface WebServerConfig {
  /** `HOST`, default 0.0.0.0: reachable as localhost on a laptop and from other containers. */
  host: string;
  /** `PORT`, default 3000. */
  port: number;
  /**
   * `ONCE_TRUST_PROXY=1`: the client's address is the last `X-Forwarded-For` entry (see
   * `stampClientAddress`); default 0, the socket's peer.
   */
  trustProxy: boolean;
}

/**
 * Reads and checks `HOST` and `PORT` once at start. Only IP literals are taken for `HOST`
 * (a name would be resolved once and could bind somewhere unexpected); `HOSTNAME` is not
 * read on purpose: Docker sets it to the container's id.
 *
 * @example
 * readWebServerConfig({ HOST: '127.0.0.1', PORT: '3000' }); // { host: '127.0.0.1', port: 3000, trustProxy: false }
 */
export function readWebServerConfig(env: Record<string, string | undefined>): WebServerConfig {
  const e = parseEnv(webServerEnv, env);
  return { host: e.HOST, port: e.PORT, trustProxy: e.ONCE_TRUST_PROXY === 1 };
}
