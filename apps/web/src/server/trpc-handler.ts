import { appRouter, createContext } from '@once/api';
import { ApiError, apiErrorToTRPC, isApiError } from '@once/api/errors';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { boundedRequest } from './body-limit.ts';
import type { WebRuntime } from './runtime.ts';

/**
 * Every mutation must say `Content-Type: application/json`, refused before the body is read:
 * tRPC would also take form and octet-stream bodies, which an HTML form on another (same-site)
 * origin can send with the victim's cookies, while JSON needs a preflight this server never grants.
 */
function refuseNonJsonMutation(req: Request): void {
  if (req.method === 'GET' || req.method === 'HEAD') return;
  const mediaType = req.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
  if (mediaType === 'application/json') return;
  throw new ApiError(
    'unsupported_media_type',
    `tRPC mutations take Content-Type: application/json, not ${mediaType || 'none'}`,
    { accepted: ['application/json'] },
  );
}

/**
 * The tRPC endpoint; `resHeaders` is in the context so the guard and `session.start` can set
 * headers. Too large or non-JSON bodies are refused in tRPC's own error shape before anything runs.
 */
export function createTrpcHandler(getRuntime: () => Promise<WebRuntime>, endpoint = '/api/trpc') {
  return async (req: Request): Promise<Response> => {
    let bounded: Request;
    try {
      refuseNonJsonMutation(req);
      bounded = await boundedRequest(req);
    } catch (error) {
      if (isApiError(error)) return refuseInTrpcShape(req, endpoint, error);
      throw error;
    }
    const { deps, router } = await getRuntime();
    return fetchRequestHandler({
      endpoint,
      req: bounded,
      router,
      createContext: ({ req, resHeaders }) => createContext({ req, resHeaders, ...deps }),
      onError({ error, path }) {
        if (error.code === 'INTERNAL_SERVER_ERROR') {
          console.log(`web: trpc ${path ?? '?'} failed: ${error.cause?.message ?? error.message}`);
        }
      },
    });
  };
}

/**
 * Answers every call of the request with `refusal`, rendered by tRPC itself (status, envelope,
 * batch or not, the router's error formatter): the context cannot be created, so no procedure
 * runs and no input is read. The body is not passed on.
 */
function refuseInTrpcShape(req: Request, endpoint: string, refusal: ApiError): Promise<Response> {
  const headers = new Headers(req.headers);
  headers.delete('content-length');
  headers.delete('transfer-encoding');
  // tRPC picks its body parser by this header before it asks for the context: a form's
  // content type would make it read the (absent) form first.
  headers.set('content-type', 'application/json');
  return fetchRequestHandler({
    endpoint,
    req: new Request(req.url, { method: req.method, headers }),
    router: appRouter,
    createContext: () => {
      throw apiErrorToTRPC(refusal);
    },
  });
}
