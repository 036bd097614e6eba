import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE_NAME = 'once_session';
/**
 * Name of the browser's operator session cookie (the cockpit's). Apart from the shopper's, so
 * signing in on the checkout of the same browser never replaces the cockpit's session.
 */
const OPERATOR_SESSION_COOKIE_NAME = 'once_operator_session';
/**
 * The request header a page sends to say which of the browser's sessions speaks for it:
 * `operator` from the cockpit. Without it the shopper's session speaks, or the operator's when
 * there is no shopper's (an operator may pay). It only picks between the caller's own cookies.
 */
const SESSION_SURFACE_HEADER = 'x-once-session';

const cookieNameOf = (role: SessionRole) =>
  role === 'operator' ? OPERATOR_SESSION_COOKIE_NAME : SESSION_COOKIE_NAME;
/**
 * How long a session lasts, from its start, with no renewal: a shopper's a day (it reads only
 * the payments it placed); an operator's 8 hours, a working day or a demo, so a cookie that
 * leaked is worth little, and the server can end it sooner (`operator_sessions`).
 */
export const SESSION_TTL_SECONDS = { shopper: 24 * 60 * 60, operator: 8 * 60 * 60 } as const;

/**
 * What a session may do: a `shopper` pays and reads the payments it placed; an `operator`
 * also reads the merchant's cockpit (`ops.*`: every payment, key and job of the tenant).
 */
export type SessionRole = 'shopper' | 'operator';

/** What a valid session cookie proves. */
export interface SessionClaims {
  tenantId: string;
  role: SessionRole;
  /** Random id of this session: the principal its new idempotency keys are counted against. */
  sessionId: string;
}

interface SessionPayload {
  t: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
  /** Role; absent in cookies issued before roles existed, which are shoppers. */
  r?: SessionRole;
  /** Session id; absent in older cookies, whose signature then stands in for it. */
  s?: string;
}

function sign(payload: string, secret: string): string {
  return createHmac('sha256', secret).update(payload).digest('base64url');
}

/** `<value>.<base64url(HMAC-SHA256)>`: any web process with the same SESSION_SECRET knows it. */
export function signValue(value: string, secret: string): string {
  return `${value}.${sign(value, secret)}`;
}

/** The value a {@link signValue} result carries when its signature is right; else undefined. */
export function verifySignedValue(signed: string, secret: string): string | undefined {
  const dot = signed.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const value = signed.slice(0, dot);
  const given = Buffer.from(signed.slice(dot + 1), 'base64url');
  const expected = Buffer.from(sign(value, secret), 'base64url');
  // Constant-time compare: a timing oracle would let an attacker forge signatures byte by byte.
  return given.length === expected.length && timingSafeEqual(given, expected) ? value : undefined;
}

/** A fresh random session id (96 bits). */
export function newSessionId(): string {
  return randomBytes(12).toString('base64url');
}

/**
 * A session value `<base64url(json)>.<base64url(HMAC-SHA256)>`: the signature proves the
 * tenant, role and expiry, so any web process with the same SESSION_SECRET reads it. A shopper
 * session is that alone; an operator session also needs its `operator_sessions` row, named by
 * `sessionId` (default: a new one). The role defaults to `shopper` (least privilege); the
 * expiry is the role's {@link SESSION_TTL_SECONDS}.
 */
export function signSessionValue(
  tenantId: string,
  secret: string,
  now: Date,
  options: { role?: SessionRole; sessionId?: string } = {},
): string {
  const role = options.role ?? 'shopper';
  const payload: SessionPayload = {
    t: tenantId,
    exp: Math.floor(now.getTime() / 1000) + SESSION_TTL_SECONDS[role],
    r: role,
    s: options.sessionId ?? newSessionId(),
  };
  return signValue(Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url'), secret);
}

/** The claims of a valid, unexpired session value; undefined for anything else. */
export function verifySessionValue(
  value: string,
  secret: string,
  now: Date,
): SessionClaims | undefined {
  const encoded = verifySignedValue(value, secret);
  if (encoded === undefined) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof payload !== 'object' || payload === null) return undefined;
  const { t, exp, r, s } = payload as Partial<SessionPayload>;
  if (typeof t !== 'string' || typeof exp !== 'number') return undefined;
  if (exp * 1000 <= now.getTime()) return undefined;
  if (r !== undefined && r !== 'shopper' && r !== 'operator') return undefined;
  return {
    tenantId: t,
    role: r ?? 'shopper',
    sessionId:
      typeof s === 'string'
        ? s
        : Buffer.from(value.slice(encoded.length + 1), 'base64url')
            .subarray(0, 12)
            .toString('base64url'),
  };
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
 * The session cookie that speaks for this request, by {@link SESSION_SURFACE_HEADER}: the
 * operator's first on the cockpit, the shopper's first elsewhere, each falling back to the other.
 */
export function readSessionCookie(headers: Headers): { name: string; value: string } | undefined {
  const names =
    headers.get(SESSION_SURFACE_HEADER) === 'operator'
      ? [OPERATOR_SESSION_COOKIE_NAME, SESSION_COOKIE_NAME]
      : [SESSION_COOKIE_NAME, OPERATOR_SESSION_COOKIE_NAME];
  for (const name of names) {
    const value = readCookie(headers, name);
    if (value !== undefined) return { name, value };
  }
  return undefined;
}

/**
 * The `Set-Cookie` value for a session: HttpOnly so page scripts never see it; SameSite=Lax so a
 * cross-site form cannot ride it into a POST; Secure when served over https.
 */
export function sessionSetCookie(
  value: string,
  options: { secure: boolean; role: SessionRole },
): string {
  return [
    `${cookieNameOf(options.role)}=${encodeURIComponent(value)}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${SESSION_TTL_SECONDS[options.role]}`,
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}

/** The `Set-Cookie` value that ends the session held in cookie `name` (default: the shopper's). */
export function sessionClearCookie(name: string = SESSION_COOKIE_NAME): string {
  return `${name}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0`;
}
