'use client';

import type { ReactNode } from 'react';
import { OnceProviders } from '../src/client/trpc-react.tsx';

/** Client-side providers for every page (React Query + tRPC). */
export function Providers({ children }: { children: ReactNode }) {
  return <OnceProviders>{children}</OnceProviders>;
}
