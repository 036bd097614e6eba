import { describe, expect, it } from 'vitest';
import {
  ATTEMPT_HEADER,
  parseRetryAfter,
  ResponseHeaderRecorder,
  recordingFetch,
} from './response-header-recorder.ts';

describe('recordingFetch', () => {
  it('records each tagged request under its own attempt id and strips the tag', async () => {
    const recorder = new ResponseHeaderRecorder();
    const sentHeaders: Headers[] = [];
    const fetch = recordingFetch(recorder, async (_input, init) => {
      const headers = new Headers(init?.headers);
      sentHeaders.push(headers);
      const replay = headers.get('idempotency-key') === 'same' && sentHeaders.length > 1;
      return new Response('{}', {
        status: replay ? 200 : 409,
        headers: replay ? { 'Idempotent-Replayed': 'true' } : { 'Retry-After': '2' },
      });
    });
    // A double click: two requests, one key, two answers.
    await fetch('/api/trpc/checkout.pay', {
      headers: { 'Idempotency-Key': 'same', [ATTEMPT_HEADER]: 'a1' },
    });
    await fetch('/api/trpc/checkout.pay', {
      headers: { 'Idempotency-Key': 'same', [ATTEMPT_HEADER]: 'a2' },
    });

    expect(sentHeaders.every((h) => !h.has(ATTEMPT_HEADER))).toBe(true);
    expect(recorder.take('a1')).toEqual({ status: 409, replayed: false, retryAfterSeconds: 2 });
    expect(recorder.take('a2')).toEqual({
      status: 200,
      replayed: true,
      retryAfterSeconds: undefined,
    });
    expect(recorder.take('a2')).toBeUndefined();
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds and HTTP dates, ignores garbage', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
