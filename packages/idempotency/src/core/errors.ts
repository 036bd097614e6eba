/**
 * Every refusal this package can answer with, and the ONE table that maps each to HTTP and tRPC.
 * Adapters never invent a status of their own: they read `IDEMPOTENCY_ERRORS`.
 */

/** Base of the RFC 9457 `type` URIs; each code's anchor is in docs/reference.md ("Answers"). */
export const PROBLEM_TYPE_BASE = 'https://once.dev/problems/idempotency#';

/** The tRPC code of each status the table uses (names only: core imports no framework). */
const TRPC_CODE_OF_STATUS = {
  400: 'BAD_REQUEST',
  409: 'CONFLICT',
  422: 'UNPROCESSABLE_CONTENT',
  429: 'TOO_MANY_REQUESTS',
  500: 'INTERNAL_SERVER_ERROR',
  503: 'SERVICE_UNAVAILABLE',
} as const;

/** Each code's HTTP status and problem title. */
const ERROR_TABLE = {
  idempotency_key_missing: [400, 'Idempotency-Key header is required'],
  idempotency_key_invalid: [400, 'Idempotency-Key must be 1-255 printable ASCII characters'],
  // Not "still being processed": after a crash nothing runs, the lease just has not ended.
  idempotency_key_in_use: [
    409,
    'A request with this Idempotency-Key is running, or stopped without finishing (its key is free again when its lease ends); retry after Retry-After',
  ],
  idempotency_key_reused: [422, 'This Idempotency-Key was already used with a different request'],
  // A tombstone (`tombstoneMs`): the key ran, its answer is no longer kept, and it must not run again.
  idempotency_key_expired: [
    409,
    'This Idempotency-Key was already used and its answer is no longer kept; send a new key to run the operation again',
  ],
  idempotency_outcome_unknown: [
    409,
    'The outcome of the original request is unknown and is being reconciled',
  ],
  idempotency_store_unavailable: [
    503,
    'The idempotency store is unavailable; nothing was executed',
  ],
  idempotency_rate_limited: [429, 'Too many new idempotency keys for this tenant'],
  idempotency_lease_lost: [
    409,
    'This request no longer holds the idempotency key (its lease was taken over)',
  ],
  idempotency_response_too_large: [
    500,
    'The response is larger than the idempotency store accepts',
  ],
  // The three below are signals inside a request, not refusals a client normally sees: the
  // engine turns an ambiguous outcome into `idempotency_outcome_unknown` (leased mode) and a
  // key conflict into a replay. They map to what a client gets if one ever escapes.
  idempotency_outcome_ambiguous: [500, 'The outcome of a side effect is unknown'],
  idempotency_key_conflict: [
    409,
    'A concurrent request with this Idempotency-Key committed first; roll back',
  ],
  idempotency_completion_missing: [500, 'The handler returned without storing its response'],
  // The handler ran: the key is kept (`unknown`), so retries get 409 idempotency_outcome_unknown.
  idempotency_result_unstorable: [
    500,
    'The operation ran but its result cannot be stored (not JSON); the key is kept as unknown',
  ],
  // Programmer errors of the handler: nothing was written by the call that raised them.
  idempotency_already_completed: [
    500,
    'complete was called again for a key this request already completed',
  ],
  idempotency_complete_outside_transaction: [
    500,
    'complete was given the database instead of the transaction of the business writes',
  ],
  // Encryption at rest: the row's key is not configured, or its value was not sealed for it.
  idempotency_answer_unreadable: [
    500,
    'The stored answer of this key cannot be decrypted (its encryption key is not configured); nothing was run',
  ],
  idempotency_input_invalid: [
    400,
    'The request input cannot be fingerprinted (too deeply nested, cyclic, or not plain data)',
  ],
} satisfies Record<string, [keyof typeof TRPC_CODE_OF_STATUS, string]>;

/** Stable, machine-readable error codes. Clients may switch on them; they never change meaning. */
export type IdempotencyErrorCode = keyof typeof ERROR_TABLE;

interface ErrorMapping {
  status: number;
  trpcCode: (typeof TRPC_CODE_OF_STATUS)[keyof typeof TRPC_CODE_OF_STATUS];
  title: string;
  type: string;
}

/**
 * The single mapping from error code to HTTP status, tRPC code, problem title and `type` URI.
 * Status codes follow draft-ietf-httpapi-idempotency-key-header.
 */
export const IDEMPOTENCY_ERRORS = Object.fromEntries(
  Object.entries(ERROR_TABLE).map(([code, [status, title]]) => [
    code,
    { status, trpcCode: TRPC_CODE_OF_STATUS[status], title, type: `${PROBLEM_TYPE_BASE}${code}` },
  ]),
) as Readonly<Record<IdempotencyErrorCode, ErrorMapping>>;

/** A refusal with a stable `code`. `status` and `retryAfterSeconds` are what adapters send. */
export class IdempotencyError extends Error {
  readonly _tag: 'IdempotencyError' = 'IdempotencyError';
  readonly code: IdempotencyErrorCode;
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: IdempotencyErrorCode,
    options: { retryAfterSeconds?: number | undefined; message?: string; cause?: unknown } = {},
  ) {
    super(options.message ?? IDEMPOTENCY_ERRORS[code].title, { cause: options.cause });
    this.name = 'IdempotencyError';
    this.code = code;
    this.status = IDEMPOTENCY_ERRORS[code].status;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/**
 * Thrown by `complete` / `advance` / `renew` / release when the caller's owner token no longer
 * holds the key (its lease expired and another attempt took it over). Thrown inside the caller's
 * transaction, it makes that transaction roll back so a late holder never overwrites new work.
 */
export class LeaseLostError extends IdempotencyError {
  constructor(message = IDEMPOTENCY_ERRORS.idempotency_lease_lost.title) {
    super('idempotency_lease_lost', { message });
    this.name = 'LeaseLostError';
  }
}

/**
 * Throw from a handler when a side effect MAY have happened (timeout, connection reset, a 5xx
 * after the request left). The key is marked `unknown` instead of being released, so no retry
 * can run the operation again until reconciliation resolves it.
 */
export class AmbiguousOutcomeError extends IdempotencyError {
  constructor(
    message = IDEMPOTENCY_ERRORS.idempotency_outcome_ambiguous.title,
    options: { cause?: unknown } = {},
  ) {
    super('idempotency_outcome_ambiguous', { message, cause: options.cause });
    this.name = 'AmbiguousOutcomeError';
  }
}

/**
 * THE way to test an error of this package: narrow an unknown error to `IdempotencyError`,
 * optionally with one `code`. Every error class here is an `IdempotencyError` with a stable
 * code, so this and `instanceof IdempotencyError` agree; this also works across duplicated
 * module copies (it checks a tag).
 */
export function isIdempotencyError(
  value: unknown,
  code?: IdempotencyErrorCode,
): value is IdempotencyError {
  const tagged =
    value instanceof IdempotencyError ||
    (typeof value === 'object' &&
      value !== null &&
      (value as { _tag?: unknown })._tag === 'IdempotencyError' &&
      typeof (value as { code?: unknown }).code === 'string');
  return tagged && (code === undefined || (value as IdempotencyError).code === code);
}

/**
 * Atomic mode: the handler returned a success without calling `exec.complete(tx, ...)` inside
 * its transaction. A programming error: nothing is stored (the engine cannot store the
 * response in the transaction that has already ended), and the request fails with it.
 */
export class AtomicCompletionMissingError extends IdempotencyError {
  constructor(operation: string) {
    super('idempotency_completion_missing', {
      message: `Operation "${operation}" runs in atomic idempotency mode but its handler returned without calling exec.complete(tx, response) inside its transaction; nothing was stored`,
    });
    this.name = 'AtomicCompletionMissingError';
  }
}

/**
 * `complete` called again for a key this attempt already completed: a programmer error. Nothing
 * is written; the first completion stands (and, if this one was inside the same transaction
 * and the error rolls it back, the key is free again with it).
 */
export function alreadyCompleted(operation: string): IdempotencyError {
  return new IdempotencyError('idempotency_already_completed', {
    message: `exec.complete was called twice for one key of "${operation}"; the first completion stands`,
  });
}
