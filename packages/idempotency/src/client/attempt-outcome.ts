/**
 * What one attempt of an idempotent request came back with, in the terms a client acts on.
 * Transport details (tRPC error shapes, problem+json, GraphQL `extensions.code`, headers)
 * are turned into this by the caller's own classifier, so the retry policy
 * ({@link runRetryFlow}) and the key manager can be tested without a network.
 */
export type AttemptOutcome<TResult> =
  | { kind: 'accepted'; result: TResult; replayed: boolean }
  /** 409 idempotency_key_in_use: the same request is running right now. */
  | { kind: 'in_use'; retryAfterSeconds: number }
  /** 409 idempotency_outcome_unknown: a side effect may have happened; being reconciled. */
  | { kind: 'outcome_unknown'; retryAfterSeconds: number }
  /** 422 idempotency_key_reused: this key was used for a different request. */
  | { kind: 'key_reused' }
  /** 503 idempotency_store_unavailable: nothing ran. */
  | { kind: 'store_unavailable'; retryAfterSeconds: number | undefined }
  /** 429: too many new keys for this caller. */
  | { kind: 'rate_limited'; retryAfterSeconds: number | undefined }
  /** No answer: connection refused or reset, or the response was lost on the way back. */
  | { kind: 'network'; detail: string }
  /** A 5xx without an idempotency code: the server released the key, a retry is safe. */
  | { kind: 'server_error'; status: number; detail: string }
  /** The session is missing or expired. */
  | { kind: 'unauthenticated' }
  /** A deliberate refusal of the request itself (invalid input, a domain rule, ...). */
  | { kind: 'rejected'; code: string; message: string };

/** The `kind` of an {@link AttemptOutcome}. */
export type AttemptOutcomeKind = AttemptOutcome<unknown>['kind'];
