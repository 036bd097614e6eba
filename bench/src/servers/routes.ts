import type { Database } from '@once/db';
import { createIdempotency, type Idempotency } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { createAdapterRoutes } from './adapter-routes.ts';
import {
  createGuardedFetchHandler,
  createPlainFetchHandler,
  type FetchHandler,
} from './fetch-routes.ts';
import type { Transaction } from './payment-write.ts';
import { createTrpcHandler } from './trpc-routes.ts';

/** The answer key of the encrypted variants (AES-256-GCM wants 32 bytes: 64 hex characters). */
export const BENCH_ENCRYPTION = { currentKeyId: 'bench', keys: { bench: 'ab'.repeat(32) } };

/**
 * The payment-write routes of the bench server, by path: tRPC procedures under `/trpc/` and
 * the fetch handlers, each unguarded, with its floors, and guarded in every mode; the fetch
 * handler again over a store that seals its answers (`-encrypted`); the other adapters'
 * routes (`adapter-routes.ts`).
 */
export function createPaymentRoutes(
  db: Database,
  idempotency: Idempotency<Transaction>,
): (pathname: string) => FetchHandler | undefined {
  const sealing = createIdempotency<Transaction>({
    store: createDrizzleStore(db, { encryption: BENCH_ENCRYPTION }),
  });
  const fetchRoutes = new Map<string, FetchHandler>([
    ['/fetch/plain', createPlainFetchHandler(db)],
    ['/fetch/floor', createPlainFetchHandler(db, 'durable')],
    ['/fetch/floor-in-transaction', createPlainFetchHandler(db, 'in-transaction')],
    ['/fetch/guarded', createGuardedFetchHandler(db, idempotency)],
    ['/fetch/guarded-atomic', createGuardedFetchHandler(db, idempotency, 'atomic')],
    [
      '/fetch/guarded-atomic-always-read',
      createGuardedFetchHandler(db, idempotency, 'atomic-always-read'),
    ],
    ['/fetch/guarded-encrypted', createGuardedFetchHandler(db, sealing)],
    ['/fetch/guarded-atomic-encrypted', createGuardedFetchHandler(db, sealing, 'atomic')],
    ...createAdapterRoutes(db, idempotency),
  ]);
  const trpc = createTrpcHandler(db, idempotency);
  return (pathname) => (pathname.startsWith('/trpc/') ? trpc : fetchRoutes.get(pathname));
}
