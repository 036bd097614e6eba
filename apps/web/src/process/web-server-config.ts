import { bindHost, configuredHostNames, integer, parseEnv, text, wholeNumber } from '@once/env';

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
  /** The web's public URL (the launcher sets it); its host is one the server answers to. */
  WEB_PUBLIC_URL: text({ default: undefined, trim: true }),
  /** More names the server answers to, comma-separated (a domain in front of it). */
  ONCE_ALLOWED_HOSTS: text({ default: undefined, trim: true }),
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
  /**
   * Names besides IP literals, `localhost` and dotless private names that a request's `Host`
   * may carry (`hostAllowed`): WEB_PUBLIC_URL's host and ONCE_ALLOWED_HOSTS.
   */
  allowedHostNames: string[];
}

/**
 * Reads and checks `HOST` and `PORT` once at start. Only IP literals are taken for `HOST`
 * (a name would be resolved once and could bind somewhere unexpected); `HOSTNAME` is not
 * read on purpose: Docker sets it to the container's id.
 *
 * @example
 * readWebServerConfig({ HOST: '127.0.0.1', PORT: '3000' }); // { host: '127.0.0.1', port: 3000, trustProxy: false, allowedHostNames: [] }
 */
export function readWebServerConfig(env: Record<string, string | undefined>): WebServerConfig {
  const e = parseEnv(webServerEnv, env);
  return {
    host: e.HOST,
    port: e.PORT,
    trustProxy: e.ONCE_TRUST_PROXY === 1,
    allowedHostNames: configuredHostNames([e.WEB_PUBLIC_URL], e.ONCE_ALLOWED_HOSTS),
  };
}
