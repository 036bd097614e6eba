import { appRouter, createContext } from '@once/api';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import type { WebRuntime } from './runtime.ts';

/**
 * The tRPC endpoint as a web-standard handler. `resHeaders` goes into the context so the
 * idempotency plugin can set `Retry-After` and `Idempotent-Replayed`, and `session.start`
 * its cookie.
 *
 * @example
 * export const POST = createTrpcHandler(getWebRuntime);
 */
export function createTrpcHandler(getRuntime: () => Promise<WebRuntime>, endpoint = '/api/trpc') {
  return async (req: Request): Promise<Response> => {
    const { deps } = await getRuntime();
    return fetchRequestHandler({
      endpoint,
      req,
      router: appRouter,
      createContext: ({ req, resHeaders }) => createContext({ req, resHeaders, ...deps }),
      onError({ error, path }) {
        if (error.code === 'INTERNAL_SERVER_ERROR') {
          console.log(`web: trpc ${path ?? '?'} failed: ${error.cause?.message ?? error.message}`);
        }
      },
    });
  };
}
