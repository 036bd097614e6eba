import { sha256Hex } from '../../core/fingerprint.ts';

/**
 * The default fingerprint input of a web request: method, path, query, and the body with its
 * media type, parsed the way that type says (JSON -> value, form -> [name, value] pairs, other
 * valid UTF-8 -> text, anything else -> the SHA-256 of its bytes), so a client re-serialising
 * the same body differently is still the same request, and two different requests never are:
 * - repeated query parameters and form fields keep their order (`amount=100&amount=5` is not
 *   `amount=5&amount=100`); pairs are sorted by name only, stably;
 * - the media type is part of it (the same text as `application/json` and as `text/plain` are
 *   two requests);
 * - a body that is not UTF-8 is hashed as bytes, never decoded (distinct invalid bytes would
 *   decode to the same replacement characters).
 */
export async function defaultFingerprintInput(request: Request): Promise<unknown> {
  return fingerprintInputOf(request, new Uint8Array(await request.clone().arrayBuffer()));
}

/**
 * `defaultFingerprintInput` of a request whose body was already read (from a clone). A string
 * is taken as the body's UTF-8 text. Internal.
 */
export function fingerprintInputOf(request: Request, body: Uint8Array | string): unknown {
  const url = new URL(request.url);
  return {
    method: request.method,
    path: url.pathname,
    query: byName([...url.searchParams.entries()]),
    body: bodyForFingerprint(request, typeof body === 'string' ? ENCODER.encode(body) : body),
  };
}

const ENCODER = new TextEncoder();
// `fatal`: invalid UTF-8 is an error here, not U+FFFD (which would make distinct bytes equal).
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function bodyForFingerprint(request: Request, bytes: Uint8Array): unknown {
  if (bytes.length === 0) return null;
  // The media type without parameters: `; charset=utf-8` on a retry is still the same request.
  const type = (request.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
  let text: string;
  try {
    text = STRICT_UTF8.decode(bytes);
  } catch {
    return { type, sha256: sha256Hex(bytes) };
  }
  if (type?.includes('json')) {
    try {
      return { type, json: JSON.parse(text) };
    } catch {
      return { type, text };
    }
  }
  if (type === 'application/x-www-form-urlencoded')
    return { type, form: byName([...new URLSearchParams(text).entries()]) };
  return { type, text };
}

/**
 * Pairs sorted by name only: `Array.prototype.sort` is stable, so the values of a repeated
 * name keep the order the client sent them in (that order is part of the request).
 */
function byName(pairs: [string, string][]): [string, string][] {
  return pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}
