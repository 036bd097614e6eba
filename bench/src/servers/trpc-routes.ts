import { randomUUID } from 'node:crypto';
import type { Database } from '@once/db';
import type { Idempotency } from '@once/idempotency';
import {
  createIdempotencyPlugin,
  type IdempotencyMeta,
  type IdempotencyProcedureMeta,
  idempotencyErrorFormatter,
} from '@once/idempotency/trpc';
import { type AnyTRPCRouter, initTRPC } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import {
  BENCH_TENANT,
  parsePayInput,
  type Transaction,
  writePayment,
  writeUnguarded,
} from './payment-write.ts';

interface Context {
  tenantId: string;
  headers: Headers;
  resHeaders: Headers;
}

/**
 * Procedures doing the same write: `pay.plain` and its floors without a guard, `pay.guarded*`
 * under the idempotency plugin, completing the key inside the payment's own transaction.
 */
export function createTrpcHandler(db: Database, idempotency: Idempotency<Transaction>) {
  const { t, idempotent } = benchTrpc(idempotency);
  /** The payment write under the plugin with `meta`, the key completed in its transaction. */
  const guardedPay = (meta: IdempotencyProcedureMeta) =>
    t.procedure
      .meta({ idempotency: meta })
      .concat(idempotent)
      .input(parsePayInput)
      .mutation(({ ctx, input }) =>
        db.transaction((tx) =>
          writePayment(tx, input, ctx.idempotency.key ?? randomUUID(), (result) =>
            ctx.idempotency.complete(tx, result),
          ),
        ),
      );
  /** The write without the plugin (`writeUnguarded`): the baseline, or with its floor row. */
  const unguardedPay = (floor?: 'durable' | 'in-transaction') =>
    t.procedure
      .input(parsePayInput)
      .mutation(({ ctx, input }) =>
        writeUnguarded(db, input, ctx.headers.get('idempotency-key') ?? randomUUID(), floor),
      );
  const router = t.router({
    pay: t.router({
      plain: unguardedPay(),
      floor: unguardedPay('durable'),
      floorInTransaction: unguardedPay('in-transaction'),
      guarded: guardedPay({ operation: 'bench.pay' }),
      // Atomic mode as checkout.pay uses it (adaptive pre-check, the default).
      guardedAtomic: guardedPay({ operation: 'bench.pay.atomic', mode: 'atomic' }),
      // Atomic mode that always reads the key before the handler (`precheck: true`).
      guardedAtomicAlwaysRead: guardedPay({
        operation: 'bench.pay.atomic.alwaysread',
        mode: 'atomic',
        precheck: true,
      }),
    }),
  });
  return trpcFetchHandler(router, '/trpc');
}

/** tRPC as the bench's procedures use it: the bench tenant's context, the plugin wired to it. */
export function benchTrpc<TTx>(idempotency: Idempotency<TTx>) {
  const t = initTRPC
    .context<Context>()
    .meta<IdempotencyMeta>()
    .create({ errorFormatter: idempotencyErrorFormatter });
  const idempotent = createIdempotencyPlugin<Context, TTx>({
    idempotency,
    getTenantId: (ctx) => ctx.tenantId,
    getRequestHeaders: (ctx) => ctx.headers,
    getResponseHeaders: (ctx) => ctx.resHeaders,
  });
  return { t, idempotent };
}

/** A `Request -> Response` handler serving `router` at `endpoint` with the bench tenant's context. */
export function trpcFetchHandler(router: AnyTRPCRouter, endpoint: string) {
  return (req: Request) =>
    fetchRequestHandler({
      endpoint,
      req,
      router,
      createContext: ({ req, resHeaders }) => ({
        tenantId: BENCH_TENANT,
        headers: req.headers,
        resHeaders,
      }),
    });
}
