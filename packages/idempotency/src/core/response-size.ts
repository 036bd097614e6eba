import { IdempotencyError } from './errors.ts';
import type { StoredResponse } from './types.ts';

/** The default cap of a stored response, engine and HTTP adapters alike: 256 KiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024;

/** Refuse to store a response over the cap: body, header names and values, as UTF-8 bytes. */
export function assertStorable(response: StoredResponse, maxBytes: number): void {
  let bytes = response.body === null ? 0 : Buffer.byteLength(response.body, 'utf8');
  for (const name in response.headers)
    bytes +=
      Buffer.byteLength(name, 'utf8') + Buffer.byteLength(response.headers[name] ?? '', 'utf8');
  if (bytes > maxBytes) {
    throw new IdempotencyError('idempotency_response_too_large', {
      message: `Response of ${bytes} bytes exceeds the idempotency store cap of ${maxBytes} bytes`,
    });
  }
}
