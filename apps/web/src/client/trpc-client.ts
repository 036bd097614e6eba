import {
  createTRPCClient,
  httpBatchLink,
  httpLink,
  splitLink,
  type TRPCClient,
} from '@trpc/client';
import type { WebRouter } from '../demo/web-router.ts';
import {
  ATTEMPT_HEADER,
  type ResponseHeaderRecorder,
  recordingFetch,
} from './response-header-recorder.ts';

/** Per-call context a mutation may carry through the links. */
interface IdempotentCallContext {
  /** Sent as the `Idempotency-Key` header of this one request. */
  idempotencyKey?: string;
  /** Tags the request so its response headers can be read back (see the recorder). */
  attemptId?: string;
}

export type OnceClient = TRPCClient<WebRouter>;

/**
 * Which of the browser's sessions speaks for this page: the cockpit (`/ops`) asks for the
 * operator's, so a shopper signing in on the checkout of the same browser (its own cookie)
 * never turns the cockpit into a shopper's page. Read at each request: the header belongs to
 * the page that sends it.
 *
 * @example
 * sessionHeadersFor('/ops/payments/pay_1'); // { 'X-Once-Session': 'operator' }
 */
function sessionHeadersFor(pathname: string): Record<string, string> {
  return pathname === '/ops' || pathname.startsWith('/ops/')
    ? { 'X-Once-Session': 'operator' }
    : {};
}

const pageSessionHeaders = () =>
  typeof window === 'undefined' ? {} : sessionHeadersFor(window.location.pathname);

function headersFor(context: Record<string, unknown>): Record<string, string> {
  const { idempotencyKey, attemptId } = context as IdempotentCallContext;
  return {
    ...(typeof idempotencyKey === 'string' ? { 'Idempotency-Key': idempotencyKey } : {}),
    ...(typeof attemptId === 'string' ? { [ATTEMPT_HEADER]: attemptId } : {}),
  };
}

/**
 * The browser's tRPC client. Mutations go over a NON-batched `httpLink`: one HTTP request
 * per mutation, so the Idempotency-Key header, the status code and the response headers
 * (`Idempotent-Replayed`, `Retry-After`) belong to that one call. A batch shares one header
 * set and one status among several calls. Queries are batched.
 *
 * @example
 * const client = createOnceClient({ recorder: new ResponseHeaderRecorder() });
 * await client.checkout.pay.mutate(input, { context: { idempotencyKey, attemptId } });
 */
export function createOnceClient(options: {
  recorder: ResponseHeaderRecorder;
  url?: string;
}): OnceClient {
  const url = options.url ?? '/api/trpc';
  const fetch = recordingFetch(options.recorder);
  return createTRPCClient<WebRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === 'mutation',
        true: httpLink({
          url,
          fetch,
          headers: ({ op }) => ({ ...pageSessionHeaders(), ...headersFor(op.context) }),
        }),
        false: httpBatchLink({ url, fetch, headers: pageSessionHeaders }),
      }),
    ],
  });
}
