import type { Database } from '@once/db';
import type { Idempotency } from '@once/idempotency';
import { createGuardedFetchHandler, createPlainFetchHandler } from './fetch-routes.ts';
import type { Transaction } from './payment-write.ts';
import { createTrpcHandler } from './trpc-routes.ts';

export type FetchHandler = (request: Request) => Promise<Response>;

/**
 * The payment-write routes of the bench server, by path: tRPC procedures under `/trpc/` and
 * the fetch handlers, each unguarded, with its floors, and guarded in every mode.
 */
export function createPaymentRoutes(
  db: Database,
  idempotency: Idempotency<Transaction>,
): (pathname: string) => FetchHandler | undefined {
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
  ]);
  const trpc = createTrpcHandler(db, idempotency);
  return (pathname) => (pathname.startsWith('/trpc/') ? trpc : fetchRoutes.get(pathname));
}
