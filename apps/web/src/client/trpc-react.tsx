'use client';

import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { createTRPCContext } from '@trpc/tanstack-react-query';
import { createContext, type ReactNode, useContext, useState } from 'react';
import type { WebRouter } from '../demo/web-router.ts';
import { ResponseHeaderRecorder } from './response-header-recorder.ts';
import { createOnceClient } from './trpc-client.ts';

const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<WebRouter>();

export { useTRPC, useTRPCClient };

const RecorderContext = createContext<ResponseHeaderRecorder | null>(null);

/** The recorder of per-request response headers the mutation link fills in. */
export function useResponseHeaderRecorder(): ResponseHeaderRecorder {
  const recorder = useContext(RecorderContext);
  if (!recorder) throw new Error('useResponseHeaderRecorder outside <OnceProviders>');
  return recorder;
}

/**
 * React Query + tRPC for the whole app. One client per browser tab (created once per
 * mount, never during server rendering of another user's request).
 *
 * @example
 * <OnceProviders><CheckoutPage /></OnceProviders>
 */
export function OnceProviders({ children }: { children: ReactNode }) {
  const [recorder] = useState(() => new ResponseHeaderRecorder());
  const [queryClient] = useState(
    () =>
      new QueryClient({
        defaultOptions: {
          queries: { staleTime: 1_000, refetchOnWindowFocus: false },
          // Mutations are never retried by React Query: checkout.pay has its own policy
          // (same key, bounded) in runRetryFlow; anything else is not safe to repeat blindly.
          mutations: { retry: false },
        },
      }),
  );
  const [trpcClient] = useState(() => createOnceClient({ recorder }));
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        <RecorderContext.Provider value={recorder}>{children}</RecorderContext.Provider>
      </TRPCProvider>
    </QueryClientProvider>
  );
}
