import { IDEMPOTENT_REPLAYED_HEADER } from '@once/idempotency';
import { pay } from '../../checkout/pay.ts';
import { type PayInput, payInput } from '../../checkout/pay.types.ts';
import { PAY_OPERATIONS } from '../../checkout/pay-attempt-events.ts';
import { status, statusInput } from '../../checkout/status.ts';
import { ApiError } from '../../errors/api-error.ts';
import { authedProcedure, createTRPCRouter, idempotencyGuard } from '../../trpc.ts';

export const checkoutRouter = createTRPCRouter({
  /**
   * Accept a checkout. Requires an `Idempotency-Key` header; see README. Atomic idempotency
   * mode: every effect of `pay` (payment, outbox job, NOTIFY, stored result) is in ONE
   * transaction, so the key is inserted completed inside it and nothing is written before.
   * The guard comes after `.input()`: malformed input never reaches the key store. `capture`
   * is the merchant's to name (its API key, an operator session); a shopper's is refused.
   */
  pay: authedProcedure
    .meta({ idempotency: { operation: PAY_OPERATIONS.trpc, mode: 'atomic' } })
    .input(payInput)
    .concat(idempotencyGuard)
    .mutation(({ ctx, input }) => {
      requireMerchantForCaptureMethod(ctx, input);
      return pay({
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
              await ctx.idempotency.complete(tx, result);
              if (origin === 'existing') ctx.resHeaders.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
            },
          },
        },
        input,
      });
    }),
  /** One payment of the caller's tenant; a shopper session sees only the payments it placed. */
  status: authedProcedure.input(statusInput).query(({ ctx, input }) =>
    status(
      {
        db: ctx.db,
        tenantId: ctx.tenantId,
        ...(ctx.role === 'operator' ? {} : { placedBy: ctx.principal }),
      },
      input,
    ),
  ),
});

/** Who is paying, as authentication found them. */
interface Payer {
  auth: 'api_key' | 'session';
  role: 'shopper' | 'operator';
}

/**
 * Refuses a checkout whose input names a capture method unless the merchant sent it (its API
 * key, or an operator session). A shopper's checkout is charged the way the merchant charges
 * (`automatic`): an authorisation a shopper asked for would sit unseen until it expired, and
 * whether to take the money now is the merchant's decision, not the buyer's. Any value is
 * refused, `automatic` too, so a later merchant default cannot be overridden from the page.
 * Thrown inside the guard: the key is released and the shopper may resend without it.
 */
function requireMerchantForCaptureMethod(payer: Payer, input: PayInput): void {
  if (input.capture === undefined) return;
  if (payer.auth === 'api_key' || payer.role === 'operator') return;
  throw new ApiError(
    'operator_required',
    'The capture method is the merchant’s: a shopper’s checkout may not name one',
    { field: 'capture' },
  );
}
