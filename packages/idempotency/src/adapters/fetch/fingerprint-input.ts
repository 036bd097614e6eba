/**
 * The default fingerprint input of a web request: method, path, query, and the body parsed the
 * way its content type says (JSON -> value, form -> sorted [name, value] pairs, else text), so
 * a client re-serialising the same body differently is still the same request.
 *
 * @example
 * withIdempotency(handler, { ..., getFingerprintInput: async (req) => ({ ...(await defaultFingerprintInput(req)), path: undefined }) });
 */
export async function defaultFingerprintInput(request: Request): Promise<unknown> {
  return fingerprintInputOf(request, await request.clone().text());
}

/**
 * `defaultFingerprintInput` of a request whose body text was already read (from a clone), so
 * the wrapper tees the body stream once instead of twice. Internal.
 */
export function fingerprintInputOf(request: Request, bodyText: string): unknown {
  const url = new URL(request.url);
  const query = [...url.searchParams.entries()].sort(comparePairs);
  return {
    method: request.method,
    path: url.pathname,
    query,
    body: bodyForFingerprint(request, bodyText),
  };
}

function bodyForFingerprint(request: Request, text: string): unknown {
  if (text === '') return null;
  const type = (request.headers.get('content-type') ?? '').toLowerCase();
  if (type.includes('json')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  if (type.includes('application/x-www-form-urlencoded')) {
    return [...new URLSearchParams(text).entries()].sort(comparePairs);
  }
  return text;
}

function comparePairs(a: [string, string], b: [string, string]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
}
