import { parseItem } from 'structured-headers';
import { IdempotencyError } from './errors.ts';

/** Header that carries the key (draft-ietf-httpapi-idempotency-key-header). */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
/** Response header set on replays (Stripe's flavour). */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

const MAX_KEY_LENGTH = 255;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/**
 * Parse an `Idempotency-Key` header value. The IETF draft defines it as an RFC 8941 sf-string
 * (`"abc"`); most clients (Stripe's SDKs, curl users) send it bare (`abc`). Both are accepted.
 * The key must be 1..255 printable ASCII characters (0x20-0x7E) after unquoting.
 *
 * @returns the key, or `undefined` if the header is absent or blank.
 * @throws IdempotencyError `idempotency_key_invalid` for anything else.
 */
export function parseIdempotencyKey(value: string | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  // Header values arrive without surrounding whitespace from fetch, but not from every framework.
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  const key = trimmed.startsWith('"') ? unquoteSfString(trimmed) : trimmed;
  if (key.length < 1 || key.length > MAX_KEY_LENGTH || !PRINTABLE_ASCII.test(key)) {
    throw new IdempotencyError('idempotency_key_invalid');
  }
  return key;
}

function unquoteSfString(value: string): string {
  let item: ReturnType<typeof parseItem>;
  try {
    item = parseItem(value);
  } catch (cause) {
    throw new IdempotencyError('idempotency_key_invalid', { cause });
  }
  const [bare, params] = item;
  // A quoted value with parameters (`"k";a=1`) is a structured header we do not understand.
  if (typeof bare !== 'string' || params.size > 0)
    throw new IdempotencyError('idempotency_key_invalid');
  return bare;
}
