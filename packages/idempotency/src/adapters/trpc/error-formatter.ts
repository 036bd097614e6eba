import { TRPCError } from '@trpc/server';
import {
  IDEMPOTENCY_ERRORS,
  type IdempotencyError,
  type IdempotencyErrorCode,
  isIdempotencyError,
} from '../../core/errors.ts';

/** What `data.idempotency` carries in a tRPC error shape. */
export interface IdempotencyErrorData {
  code: IdempotencyErrorCode;
  retryAfterSeconds: number | null;
}

/** Extract the idempotency details from a tRPC error (its `cause`), or null for other errors. */
export function idempotencyErrorData(error: unknown): IdempotencyErrorData | null {
  const cause = error instanceof TRPCError ? error.cause : error;
  if (!isIdempotencyError(cause)) return null;
  return { code: cause.code, retryAfterSeconds: cause.retryAfterSeconds ?? null };
}

/**
 * A ready `errorFormatter` for `initTRPC.create()`: adds `data.idempotency = { code, retryAfterSeconds }`
 * (null for errors that are not about idempotency). Compose it with your own formatter if you have one.
 */
export function idempotencyErrorFormatter<TShape extends { data: object }>(opts: {
  shape: TShape;
  error: TRPCError;
}): TShape & { data: TShape['data'] & { idempotency: IdempotencyErrorData | null } } {
  return {
    ...opts.shape,
    data: { ...opts.shape.data, idempotency: idempotencyErrorData(opts.error) },
  };
}

/**
 * The one mapping of an `IdempotencyError` to a `TRPCError` (code from `IDEMPOTENCY_ERRORS`),
 * keeping the error as `cause` for `idempotencyErrorData`.
 */
export function idempotencyErrorToTRPC(error: IdempotencyError): TRPCError {
  return new TRPCError({
    code: IDEMPOTENCY_ERRORS[error.code].trpcCode,
    message: error.message,
    cause: error,
  });
}
