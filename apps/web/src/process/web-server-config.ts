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

/**
 * Reads and checks the listening address once at start: `HOST` only as an IP literal (a name
 * could bind somewhere unexpected); `HOSTNAME` is not read: Docker sets it to the container's id.
 */
export function readWebServerConfig(env: Record<string, string | undefined>) {
  const e = parseEnv(webServerEnv, env);
  return {
    host: e.HOST,
    port: e.PORT,
    trustProxy: e.ONCE_TRUST_PROXY === 1,
    // Names besides IP literals, `localhost` and dotless private names a `Host` may carry.
    allowedHostNames: configuredHostNames([e.WEB_PUBLIC_URL], e.ONCE_ALLOWED_HOSTS),
  };
}

export type WebServerConfig = ReturnType<typeof readWebServerConfig>;
