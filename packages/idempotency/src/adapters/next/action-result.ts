import type { IdempotencyErrorCode } from '../../core/errors.ts';

/**
 * What an idempotent Server Action returns. A Server Action has no HTTP status of its own and
 * Next.js hides thrown errors' messages in production, so refusals come back as values with
 * the same stable code and status the REST and tRPC adapters use.
 */
export type IdempotentActionResult<TResult> =
  | {
      ok: true;
      data: TResult;
      /** True when this is the stored result of an earlier call with the same key. */
      replayed: boolean;
    }
  | {
      ok: false;
      code: IdempotencyErrorCode;
      /** The HTTP status the REST adapter would answer (409, 422, 503, ...). */
      status: number;
      retryAfterSeconds: number | undefined;
      message: string;
    };
