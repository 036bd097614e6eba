/**
 * What one `checkout.pay` request came back with, in the terms the checkout acts on.
 * Transport details (tRPC error shapes, headers) are turned into this by
 * `classifyPayError`, so the retry policy in `runPayFlow` can be tested without a network.
 */
export type PayAttempt<TResult> =
  | { kind: 'accepted'; result: TResult; replayed: boolean }
  /** 409 idempotency_key_in_use: the same payment is running right now. */
  | { kind: 'in_use'; retryAfterSeconds: number }
  /** 409 idempotency_outcome_unknown: a side effect may have happened; being reconciled. */
  | { kind: 'outcome_unknown'; retryAfterSeconds: number }
  /** 422 idempotency_key_reused: this key was used for a different cart. */
  | { kind: 'key_reused' }
  /** 503 idempotency_store_unavailable: nothing ran, nothing was charged. */
  | { kind: 'store_unavailable'; retryAfterSeconds: number | undefined }
  /** 429: too many new payments for this merchant. */
  | { kind: 'rate_limited'; retryAfterSeconds: number | undefined }
  /** No answer: connection refused or reset, or the response was lost on the way back. */
  | { kind: 'network'; detail: string }
  /** A 5xx without an idempotency code: the server released the key, a retry is safe. */
  | { kind: 'server_error'; status: number; detail: string }
  /** The session is missing or expired. */
  | { kind: 'unauthenticated' }
  /** A deliberate refusal of the request itself (empty cart, unknown product, ...). */
  | { kind: 'rejected'; code: string; message: string };

export type PayAttemptKind = PayAttempt<unknown>['kind'];
