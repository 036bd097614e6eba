import { IdempotencyError } from './errors.ts';
import type { StoredResponse } from './types.ts';

/** The default cap of a stored response, engine and HTTP adapters alike: 256 KiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024;

/** Bytes a stored response occupies (body + header names and values), as UTF-8. */
function storedResponseBytes(response: StoredResponse): number {
  let bytes = response.body === null ? 0 : Buffer.byteLength(response.body, 'utf8');
  for (const [name, value] of Object.entries(response.headers)) {
    bytes += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(value, 'utf8');
  }
  return bytes;
}

/** Refuse to store a response over the configured cap (before anything is written). */
export function assertStorable(response: StoredResponse, maxBytes: number): void {
  // UTF-8 takes at most 3 bytes per UTF-16 code unit: a response that cannot reach the cap even
  // so (nearly every one) is not counted byte by byte.
  let bound = response.body === null ? 0 : response.body.length;
  for (const name in response.headers) bound += name.length + (response.headers[name]?.length ?? 0);
  if (bound * 3 <= maxBytes) return;
  const bytes = storedResponseBytes(response);
  if (bytes > maxBytes) {
    throw new IdempotencyError('idempotency_response_too_large', {
      message: `Response of ${bytes} bytes exceeds the idempotency store cap of ${maxBytes} bytes`,
    });
  }
}
