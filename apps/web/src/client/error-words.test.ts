import { TRPCClientError } from '@trpc/client';
import { describe, expect, it } from 'vitest';
import { errorWords } from './error-words.ts';

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
});
