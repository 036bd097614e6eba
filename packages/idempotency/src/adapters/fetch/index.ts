// Public face of the web-standard Request -> Response adapter.
export type { IdempotencyAnswer } from '../../core/answered.ts';
export { IDEMPOTENCY_ERRORS, PROBLEM_TYPE_BASE } from '../../core/errors.ts';
export {
  type FetchAnswer,
  type FetchExecution,
  type FetchIdempotency,
  type FetchIdempotencyOptions,
  fetchIdempotency,
  type IdempotentRequest,
} from './fetch-idempotency.ts';
export { defaultFingerprintInput } from './fingerprint-input.ts';
export { problemDetailsResponse } from './problem-details.ts';
export {
  DEFAULT_REPLAY_HEADERS,
  replayedResponse,
  responseOf,
  storedJson,
  storedResponseFrom,
} from './stored-response.ts';
export { type WithIdempotencyOptions, withIdempotency } from './with-idempotency.ts';
