/** Names one attempt for the recording `fetch`; stripped before the request leaves. */
export const ATTEMPT_HEADER = 'x-once-attempt';

/** Response headers the checkout needs per request; tRPC's result does not carry them. */
export interface RecordedHeaders {
  status: number;
  replayed: boolean;
  retryAfterSeconds: number | undefined;
}

/**
 * Keeps the response headers of tagged requests until the caller takes them, keyed by attempt
 * rather than Idempotency-Key: a double click sends one key twice, and each reads its own answer.
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

  take(attemptId: string): RecordedHeaders | undefined {
    const recorded = this.byAttempt.get(attemptId);
    this.byAttempt.delete(attemptId);
    return recorded;
  }
}

/** Seconds from a `Retry-After` header: delta-seconds or an HTTP date (RFC 9110 10.2.3). */
export function parseRetryAfter(value: string | null, now: Date = new Date()): number | undefined {
  const trimmed = value?.trim();
  if (!trimmed) return undefined;
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - now.getTime()) / 1000));
}

/** A `fetch` for tRPC links that records the headers of requests tagged {@link ATTEMPT_HEADER}. */
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
