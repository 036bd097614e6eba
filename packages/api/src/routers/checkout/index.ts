import { IDEMPOTENT_REPLAYED_HEADER, parseIdempotencyKey } from '@once/idempotency';
import { recordReplayedAttempt } from '../../checkout/pay-attempt-events.ts';
import { authedProcedure, createTRPCRouter, idempotencyGuard } from '../../trpc.ts';
import { pay } from './pay.ts';
import { payInput } from './pay.types.ts';
import { status } from './status.ts';
import { statusInput } from './status.types.ts';

export const checkoutRouter = createTRPCRouter({
  /**
   * Accept a checkout. Requires an `Idempotency-Key` header; see README. Atomic idempotency
   * mode: every effect of `pay` (payment, outbox job, NOTIFY, stored result) is in ONE
   * transaction, so the key is inserted completed inside it and nothing is written before.
   * The guard comes after `.input()`: malformed input never reaches the key store.
   */
  pay: authedProcedure
    // Outermost: sees the answer whether `pay` ran or the guard replayed a stored response.
    .use(async ({ ctx, next }) => {
      const attempt = { payRan: false };
      const result = await next({ ctx: { payAttempt: attempt } });
      // The guard has parsed this header already: a replay means it was valid.
      const key = result.ok ? parseIdempotencyKey(ctx.headers.get('idempotency-key')) : undefined;
      const replayedByGuard =
        result.ok && !attempt.payRan && ctx.resHeaders.get(IDEMPOTENT_REPLAYED_HEADER) === 'true';
      if (replayedByGuard && key) {
        const paymentId = (result.data as { paymentId?: unknown } | undefined)?.paymentId;
        if (typeof paymentId === 'string') {
          // The guard answered from the stored response; the timeline still shows the attempt.
          await recordReplayedAttempt(
            ctx.db,
            { tenantId: ctx.tenantId, paymentId, key, transport: 'trpc' },
            'stored_response',
            // A lost timeline entry must not turn a correct replay into an error.
          ).catch(() => undefined);
        }
      }
      return result;
    })
    .meta({ idempotency: { operation: 'checkout.pay', mode: 'atomic' } })
    .input(payInput)
    .concat(idempotencyGuard)
    .mutation(({ ctx, input }) =>
      pay({
        ctx: {
          db: ctx.db,
          tenantId: ctx.tenantId,
          placedBy: ctx.principal,
          transport: 'trpc',
          notifyOutbox: ctx.outboxNotify,
          idempotency: {
            // The plugin refuses a missing key before the handler runs (required by default).
            key: ctx.idempotency.key!,
            // The plugin stores the result as the JSON it replays. An existing payment found by
            // its key is a replay too: the caller was not charged again.
            complete: async (tx, result, origin) => {
              ctx.payAttempt.payRan = true;
              await ctx.idempotency.complete(tx, result);
              if (origin === 'existing') ctx.resHeaders.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
            },
          },
        },
        input,
      }),
    ),
  /** One payment of the caller's tenant; a shopper session sees only the payments it placed. */
  status: authedProcedure.input(statusInput).query(({ ctx, input }) =>
    status({
      ctx: {
        db: ctx.db,
        tenantId: ctx.tenantId,
        ...(ctx.role === 'operator' ? {} : { placedBy: ctx.principal }),
      },
      input,
    }),
  ),
});
