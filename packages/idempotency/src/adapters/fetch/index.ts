// Public face of the web-standard Request -> Response adapter.
export { IDEMPOTENCY_ERRORS, PROBLEM_TYPE_BASE } from '../../core/errors.ts';
export {
  type FetchAnswer,
  type FetchExecution,
  type FetchIdempotency,
  type FetchIdempotencyOptions,
  fetchIdempotency,
  type IdempotentRequest,
} from './fetch-idempotency.ts';
export { problemDetailsResponse } from './problem-details.ts';
export { responseOf, storedJson } from './stored-response.ts';
export { type WithIdempotencyOptions, withIdempotency } from './with-idempotency.ts';
