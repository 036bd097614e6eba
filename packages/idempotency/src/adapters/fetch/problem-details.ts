import { IDEMPOTENCY_ERRORS, type IdempotencyError } from '../../core/errors.ts';

/**
 * Render an `IdempotencyError` as RFC 9457 `application/problem+json`, with `Retry-After`
 * when the error has one. `type` is the documented URI of the code (see docs/reference.md, "Answers").
 */
export function problemDetailsResponse(error: IdempotencyError): Response {
  const mapping = IDEMPOTENCY_ERRORS[error.code];
  const headers = new Headers({ 'content-type': 'application/problem+json' });
  if (error.retryAfterSeconds !== undefined)
    headers.set('retry-after', String(error.retryAfterSeconds));
  const body = {
    type: mapping.type,
    title: mapping.title,
    status: mapping.status,
    detail: error.message === mapping.title ? undefined : error.message,
    code: error.code,
    retry_after: error.retryAfterSeconds,
  };
  return new Response(JSON.stringify(body), { status: mapping.status, headers });
}
