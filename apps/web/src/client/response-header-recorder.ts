/**
 * Internal request header naming one attempt. Stripped before the request leaves the
 * browser: it exists only so the recording `fetch` knows whose response headers it saw.
 */
export const ATTEMPT_HEADER = 'x-once-attempt';

/** Response headers the checkout needs per request; tRPC's result does not carry them. */
export interface RecordedHeaders {
  status: number;
  replayed: boolean;
  retryAfterSeconds: number | undefined;
}

/**
 * Keeps the response headers of tagged requests until the caller takes them. Keyed by an
 * attempt id rather than the Idempotency-Key: a double click sends two requests with the
 * same key, and each must read its own answer.
 *
 * @example
 * const recorder = new ResponseHeaderRecorder();
 * const fetch = recordingFetch(recorder); // give it to httpLink({ fetch })
 * // after the call: recorder.take(attemptId)?.replayed
 */
export class ResponseHeaderRecorder {
  private readonly byAttempt = new Map<string, RecordedHeaders>();

  record(attemptId: string, response: Response): void {
    this.byAttempt.set(attemptId, {
      status: response.status,
      replayed: response.headers.get('idempotent-replayed')?.trim().toLowerCase() === 'true',
      retryAfterSeconds: parseRetryAfter(response.headers.get('retry-after')),
    });
    // Requests whose caller never came back (page left) must not pile up.
    if (this.byAttempt.size > 100) {
      const oldest = this.byAttempt.keys().next().value;
      if (oldest !== undefined) this.byAttempt.delete(oldest);
    }
  }

  /** The headers recorded for an attempt, removed from the recorder. */
  take(attemptId: string): RecordedHeaders | undefined {
    const recorded = this.byAttempt.get(attemptId);
    this.byAttempt.delete(attemptId);
    return recorded;
  }
}

/**
 * Seconds from a `Retry-After` header: delta-seconds or an HTTP date (RFC 9110 10.2.3).
 *
 * @example
 * parseRetryAfter('2') // 2
 */
export function parseRetryAfter(value: string | null, now: Date = new Date()): number | undefined {
  const trimmed = value?.trim();
  if (!trimmed) return undefined;
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - now.getTime()) / 1000));
}

/**
 * A `fetch` for tRPC links that records the response headers of requests tagged with
 * {@link ATTEMPT_HEADER}, and removes the tag before sending.
 *
 * @example
 * httpLink({ url: '/api/trpc', fetch: recordingFetch(recorder) })
 */
export function recordingFetch(
  recorder: ResponseHeaderRecorder,
  baseFetch: typeof fetch = (input, init) => globalThis.fetch(input, init),
) {
  return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    const attemptId = headers.get(ATTEMPT_HEADER);
    headers.delete(ATTEMPT_HEADER);
    const response = await baseFetch(input, { ...init, headers });
    if (attemptId !== null) recorder.record(attemptId, response);
    return response;
  };
}
