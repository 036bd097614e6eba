import { appRouter, createContext } from '@once/api';
import { ApiError, apiErrorToTRPC, isApiError } from '@once/api/errors';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { API_MAX_BODY_BYTES, boundedRequest } from './body-limit.ts';
import type { WebRuntime } from './runtime.ts';

/**
 * A POST (every mutation: `session.start`, `session.end`, `checkout.pay`, the chaos switches)
 * must say `Content-Type: application/json`. tRPC would also take `multipart/form-data` and
 * `application/octet-stream`, and those a plain HTML form on another origin can send with the
 * victim's cookies (SameSite=Lax lets a same-site sibling's form POST through); a JSON body
 * from another origin needs a CORS preflight this server never grants. So the refusal comes
 * before the body is read and before any procedure runs.
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
 * The tRPC endpoint as a web-standard handler. `resHeaders` goes into the context so the
 * idempotency plugin can set `Retry-After` and `Idempotent-Replayed`, and `session.start`
 * its cookie. A body over {@link API_MAX_BODY_BYTES} is answered 413 (`PAYLOAD_TOO_LARGE`,
 * `data.code = 'payload_too_large'`) in tRPC's own error shape before any input is parsed or
 * any procedure runs; so is a POST that is not `application/json` (415,
 * `unsupported_media_type`, see {@link refuseNonJsonMutation}).
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
