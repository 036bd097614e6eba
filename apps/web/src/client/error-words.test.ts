import { TRPCClientError } from '@trpc/client';
import { describe, expect, it } from 'vitest';
import { answeredByServer, errorWords } from './error-words.ts';

const serverError = (data: Record<string, unknown>, message: string) =>
  TRPCClientError.from({ error: { code: -32000, message, data } });

// The session, the catalogue and the demo sign-in printed `error.message`: during a database
// restart that was "Failed query: select "id", "name" from "tenants" ...".
describe('errorWords', () => {
  const RAW = /Failed|query|tenants|fetch|JSON/;
  it.each([
    [
      'the database restarting (503)',
      serverError(
        { httpStatus: 503, code: 'idempotency_store_unavailable' },
        'The idempotency store is unavailable; nothing was executed',
      ),
      /briefly unavailable/,
    ],
    [
      'a 500 carrying SQL',
      serverError(
        { httpStatus: 500, code: 'internal_server_error' },
        'Failed query: select "id", "name" from "tenants"',
      ),
      /Something went wrong/,
    ],
    ['no answer', TRPCClientError.from(new TypeError('Failed to fetch')), /could not be reached/],
    ['not a tRPC error', new SyntaxError('Unexpected end of JSON input'), /could not be reached/],
  ])('%s: worded, no raw text', (_name, error, words) => {
    expect(errorWords(error)).toMatch(words);
    expect(errorWords(error)).not.toMatch(RAW);
  });

  // The cockpit said "the web server did not answer" for a 403: it answered, and refused.
  it('a 403 says what was refused, never that the server could not be reached', () => {
    const shopper = serverError(
      { httpStatus: 403, code: 'operator_required' },
      'This needs an operator session',
    );
    expect(errorWords(shopper)).toMatch(/operator/);
    // The web's host guard answers problem+json before tRPC: no tRPC envelope, only a status.
    const response = new Response('{}', { status: 403 });
    const hostRefused = TRPCClientError.from(
      new Error('Unable to transform response from server'),
      {
        meta: { response, responseJSON: { code: 'host_not_allowed', status: 403 } },
      },
    );
    for (const error of [shopper, hostRefused]) {
      expect(errorWords(error)).toMatch(/403|refused/);
      expect(errorWords(error)).not.toMatch(/could not be reached|not signed in/);
    }
    expect(errorWords(hostRefused)).toMatch(/host_not_allowed/);
    expect(answeredByServer(hostRefused)).toBe(true);
    expect(answeredByServer(TRPCClientError.from(new TypeError('Failed to fetch')))).toBe(false);
  });
});
