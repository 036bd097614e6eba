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
 * Which of the browser's sessions speaks for this page, read at each request: the cockpit
 * (`/ops`) asks for the operator's, so a shopper signed in on the same browser's checkout never
 * turns the cockpit into a shopper's page.
 */
function pageSessionHeaders(): Record<string, string> {
  if (typeof window === 'undefined') return {};
  const { pathname } = window.location;
  return pathname === '/ops' || pathname.startsWith('/ops/')
    ? { 'X-Once-Session': 'operator' }
    : {};
}

function headersFor(context: Record<string, unknown>): Record<string, string> {
  const { idempotencyKey, attemptId } = context as IdempotentCallContext;
  return {
    ...(typeof idempotencyKey === 'string' ? { 'Idempotency-Key': idempotencyKey } : {}),
    ...(typeof attemptId === 'string' ? { [ATTEMPT_HEADER]: attemptId } : {}),
  };
}

/**
 * The browser's tRPC client. Mutations go over a NON-batched `httpLink`, so the Idempotency-Key
 * header, the status and the response headers belong to that one call; queries are batched.
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
