import { recordPaymentEvents } from '@once/db/payment-events';
import { type IdempotencyMeta, idempotencyErrorData } from '@once/idempotency/trpc';
import { initTRPC, type TRPCError } from '@trpc/server';
import type { Database } from '../../database.ts';
import { isApiError } from '../../errors/api-error.ts';

/**
 * How one operator money request was answered, as its key's story tells it: `executed` (it
 * acted), `replayed` (the key's stored answer, nothing acted again), or the refusal's stable
 * code (`idempotency_key_in_use` 409, `idempotency_key_reused` 422, `refund_amount_too_large`...).
 */
function answerOf(result: { ok: true } | { ok: false; error: TRPCError }, replayed: boolean) {
  if (result.ok) return replayed ? 'replayed' : 'executed';
  const cause = result.error.cause;
  if (isApiError(cause)) return cause.code;
  return idempotencyErrorData(result.error)?.code ?? result.error.code.toLowerCase();
}

/**
 * Records every capture, void and refund request that carried an `Idempotency-Key` on its
 * payment's timeline (`operator.attempt`, from the operator's lane to the web), however the
 * guard answered it: the first execution, each replay, each 409 and 422. Concat it between
 * `.input()` and the idempotency guard, so it hears the guard's own answer and refusals.
 * Written after the answer, on its own: a story entry lost to a crash never changes an answer,
 * and a failing write is logged, never turned into the request's error.
 */
export const operatorAttemptStory = initTRPC
  .context<{ db: Database; tenantId: string; headers: Headers; resHeaders: Headers }>()
  .meta<IdempotencyMeta>()
  .create()
  .procedure.use(async ({ ctx, meta, getRawInput, next }) => {
    const result = await next();
    const key = ctx.headers.get('idempotency-key');
    const paymentId = ((await getRawInput().catch(() => null)) as { paymentId?: unknown } | null)
      ?.paymentId;
    if (!key || typeof paymentId !== 'string') return result;
    const answer = answerOf(result, ctx.resHeaders.get('idempotent-replayed') === 'true');
    await recordPaymentEvents(ctx.db, [
      {
        tenantId: ctx.tenantId,
        paymentId,
        actor: 'operator',
        kind: 'operator.attempt',
        detail: { to: 'web', key, operation: meta?.idempotency?.operation ?? null, answer },
      },
    ]).catch((error: unknown) => console.error('operator.attempt not recorded:', error));
    return result;
  });
