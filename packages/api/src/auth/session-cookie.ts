import { createHmac, timingSafeEqual } from 'node:crypto';

/** Name of the browser session cookie. */
export const SESSION_COOKIE_NAME = 'once_session';
/** A demo session lasts a day; long enough for a demo, short enough to rotate. */
export const SESSION_TTL_SECONDS = 24 * 60 * 60;

interface SessionPayload {
  /** Tenant id. */
  t: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
}

function sign(payload: string, secret: string): string {
  return createHmac('sha256', secret).update(payload).digest('base64url');
}

/**
 * A session value `<base64url(json)>.<base64url(HMAC-SHA256)>`. Stateless: the signature is
 * the proof, so any web process with the same SESSION_SECRET accepts it.
 *
 * @example
 * const value = signSessionValue('tenant_a', process.env.SESSION_SECRET!, new Date());
 */
export function signSessionValue(tenantId: string, secret: string, now: Date): string {
  const payload: SessionPayload = {
    t: tenantId,
    exp: Math.floor(now.getTime() / 1000) + SESSION_TTL_SECONDS,
  };
  const encoded = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
  return `${encoded}.${sign(encoded, secret)}`;
}

/** The tenant id of a valid, unexpired session value; undefined for anything else. */
export function verifySessionValue(value: string, secret: string, now: Date): string | undefined {
  const dot = value.indexOf('.');
  if (dot <= 0) return undefined;
  const encoded = value.slice(0, dot);
  const given = Buffer.from(value.slice(dot + 1), 'base64url');
  const expected = Buffer.from(sign(encoded, secret), 'base64url');
  // Constant-time compare: a timing oracle would let an attacker forge signatures byte by byte.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof payload !== 'object' || payload === null) return undefined;
  const { t, exp } = payload as Partial<SessionPayload>;
  if (typeof t !== 'string' || typeof exp !== 'number') return undefined;
  if (exp * 1000 <= now.getTime()) return undefined;
  return t;
}

/** Reads one cookie from a `Cookie` header. */
export function readCookie(headers: Headers, name: string): string | undefined {
  const header = headers.get('cookie');
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

/**
 * The `Set-Cookie` value for a session. HttpOnly so page scripts never see it; SameSite=Lax
 * so a cross-site form cannot ride it into a POST; Secure when served over https.
 */
export function sessionSetCookie(value: string, options: { secure: boolean }): string {
  return [
    `${SESSION_COOKIE_NAME}=${encodeURIComponent(value)}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${SESSION_TTL_SECONDS}`,
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}

/** The `Set-Cookie` value that ends the session. */
export function sessionClearCookie(): string {
  return `${SESSION_COOKIE_NAME}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0`;
}
