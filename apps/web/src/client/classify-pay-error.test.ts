import { TRPCClientError } from '@trpc/client';
import { describe, expect, it } from 'vitest';
import { classifyPayError, GENERIC_REFUSAL, NO_ANSWER_DETAIL } from './classify-pay-error.ts';

/** A tRPC error as the httpLink builds it from the server's JSON error envelope. */
function serverError(data: Record<string, unknown>, message = 'refused') {
  return TRPCClientError.from({ error: { code: -32000, message, data } });
}

describe('classifyPayError', () => {
  it('reads a conflict and its Retry-After from the idempotency data', () => {
    const error = serverError({
      httpStatus: 409,
      code: 'idempotency_key_in_use',
      idempotency: { code: 'idempotency_key_in_use', retryAfterSeconds: 3 },
    });
    expect(classifyPayError(error, undefined)).toEqual({ kind: 'in_use', retryAfterSeconds: 3 });
  });

  it('falls back to the recorded Retry-After header, then to a short wait', () => {
    const data = {
      httpStatus: 409,
      idempotency: { code: 'idempotency_key_in_use', retryAfterSeconds: null },
    };
    const recorded = { status: 409, replayed: false, retryAfterSeconds: 7 };
    expect(classifyPayError(serverError(data), recorded)).toEqual({
      kind: 'in_use',
      retryAfterSeconds: 7,
    });
    expect(classifyPayError(serverError(data), undefined)).toEqual({
      kind: 'in_use',
      retryAfterSeconds: 1,
    });
  });

  it.each([
    ['idempotency_key_reused', 422, { kind: 'key_reused' }],
    ['idempotency_store_unavailable', 503, { kind: 'store_unavailable', retryAfterSeconds: 2 }],
    ['idempotency_rate_limited', 429, { kind: 'rate_limited', retryAfterSeconds: 2 }],
    ['idempotency_outcome_unknown', 409, { kind: 'outcome_unknown', retryAfterSeconds: 2 }],
  ])('maps %s', (code, httpStatus, expected) => {
    const error = serverError({ httpStatus, code, idempotency: { code, retryAfterSeconds: 2 } });
    expect(classifyPayError(error, undefined)).toEqual(expected);
  });

  it('treats a domain refusal as final, with its stable code', () => {
    const error = serverError({ httpStatus: 400, code: 'empty_cart' }, 'The cart is empty');
    expect(classifyPayError(error, undefined)).toEqual({
      kind: 'rejected',
      code: 'empty_cart',
      message: 'The cart is empty',
    });
  });

  it('asks for a new session on 401', () => {
    expect(
      classifyPayError(serverError({ httpStatus: 401, code: 'unauthenticated' }), undefined),
    ).toEqual({
      kind: 'unauthenticated',
    });
  });

  it('treats a 5xx without an idempotency code as retryable (the key was released)', () => {
    const error = serverError({ httpStatus: 500, code: 'internal_server_error' });
    expect(classifyPayError(error, undefined)).toMatchObject({ kind: 'server_error', status: 500 });
  });

  it('treats no answer at all (fetch rejected) as a network failure, in words (never the error text)', () => {
    const error = TRPCClientError.from(new TypeError('Failed to fetch'));
    expect(classifyPayError(error, undefined)).toEqual({
      kind: 'network',
      detail: NO_ANSWER_DETAIL,
    });
    expect(classifyPayError(new Error('boom'), undefined)).toEqual({
      kind: 'network',
      detail: NO_ANSWER_DETAIL,
    });
  });

  it('treats a non-tRPC 502 page as a server error', () => {
    const error = TRPCClientError.from(new Error('Unexpected token <'));
    expect(
      classifyPayError(error, { status: 502, replayed: false, retryAfterSeconds: undefined }),
    ).toMatchObject({
      kind: 'server_error',
      status: 502,
    });
  });

  it('treats a 2xx whose body could not be read as no answer: the payment may exist, retry with the key', () => {
    // A response cut after its status line (a connection lost mid-answer): Chromium reports
    // 200 with an empty body. The request ran; saying "refused, nothing was charged" would lie.
    const error = TRPCClientError.from(
      new SyntaxError("Failed to execute 'json' on 'Response': Unexpected end of JSON input"),
    );
    expect(
      classifyPayError(error, { status: 200, replayed: false, retryAfterSeconds: undefined }),
    ).toMatchObject({ kind: 'network' });
  });
});

// Scene 5 showed "Failed query: select "id", "name" from "tenants" ..." and scene 2's retry
// "Failed to execute 'json' on 'Response': Unexpected end of JSON input": the page printed the
// error's own text. Whatever comes back, the checkout words it itself.
describe('classifyPayError never passes on raw server or JavaScript text', () => {
  const RAW = /Failed query|tenants|Failed to execute|JSON|Unexpected|TypeError|ECONN|boom/;
  const cases: [string, unknown, Parameters<typeof classifyPayError>[1]][] = [
    [
      'a 500 whose message is the SQL',
      serverError(
        { httpStatus: 500, code: 'internal_server_error' },
        'Failed query: select "id", "name" from "tenants" where "tenants"."api_key_sha256" = $1',
      ),
      undefined,
    ],
    [
      'a cut answer (the lost-response scene)',
      TRPCClientError.from(
        new SyntaxError("Failed to execute 'json' on 'Response': Unexpected end of JSON input"),
      ),
      { status: 200, replayed: false, retryAfterSeconds: undefined },
    ],
    [
      'a proxy page',
      TRPCClientError.from(new SyntaxError('Unexpected token <')),
      { status: 502, replayed: false, retryAfterSeconds: undefined },
    ],
    ['a thrown TypeError', new TypeError('boom is not a function'), undefined],
    [
      'a refusal with a code the checkout does not know',
      serverError({ httpStatus: 400, code: 'bad_request' }, 'Failed query: select 1 from tenants'),
      undefined,
    ],
    [
      "a known refusal with the server's own message",
      serverError({ httpStatus: 400, code: 'unknown_product' }, 'No product "x"; Failed query'),
      undefined,
    ],
  ];
  it.each(cases)('%s', (_name, error, recorded) => {
    const outcome = classifyPayError(error, recorded);
    expect(JSON.stringify(outcome)).not.toMatch(RAW);
  });

  it('an unknown refusal is the generic message: not submitted twice, try again', () => {
    const outcome = classifyPayError(
      serverError({ httpStatus: 400, code: 'bad_request' }, 'raw'),
      undefined,
    );
    expect(outcome).toEqual({ kind: 'rejected', code: 'bad_request', message: GENERIC_REFUSAL });
    expect(GENERIC_REFUSAL).toMatch(/not submitted twice/);
  });

  it('a 5xx says only its status', () => {
    const error = serverError({ httpStatus: 500, code: 'internal_server_error' }, 'Failed query');
    expect(classifyPayError(error, undefined)).toEqual({
      kind: 'server_error',
      status: 500,
      detail: 'the server answered 500',
    });
  });
});
