import type { Database, Transaction } from '../../database.ts';
import {
  capturePaymentInput,
  listMerchantRefunds,
  type MoneyActionContext,
  readMerchantPayment,
  refundPayment,
  refundPaymentInput,
  requestAuthorizationAction,
  requestKeyOf,
  voidPaymentInput,
} from '../../money-actions/index.ts';
import { createTRPCRouter, idempotencyGuard, operatorProcedure } from '../../trpc.ts';
import {
  idempotencyKeyActionInput,
  idempotencyKeyInput,
  idempotencyKeysInput,
  inspectIdempotencyKey,
  listIdempotencyKeys,
  runKeyAction,
} from './idempotency-keys.ts';
import { compareWithProcessorLedger } from './ledger.ts';
import {
  countStuckPayments,
  listOutboxJobs,
  listPayments,
  opsListInput,
  stuckPaymentsInput,
} from './lists.ts';
import { operatorAttemptStory } from './operator-attempt-events.ts';
import { paymentTimeline, paymentTimelineInput } from './payment-timeline.ts';
import {
  resendWebhook,
  resendWebhookInput,
  webhookDeliveries,
  webhookDeliveriesInput,
} from './webhook-deliveries.ts';

/**
 * The operator cockpit's read models, its two audited actions on idempotency keys, the
 * capture, void and refund of payments, and the resend of a webhook event; every list is the
 * caller's tenant only, and only an operator (operator session, the merchant's API key) may
 * read them or act: they show every shopper's payments, emails and keys.
 */
export const opsRouter = createTRPCRouter({
  payments: operatorProcedure
    .input(opsListInput)
    .query(({ ctx, input }) => listPayments(ctx, input)),
  idempotencyKeys: operatorProcedure
    .input(idempotencyKeysInput)
    .query(({ ctx, input }) => listIdempotencyKeys(ctx, input)),
  /** One key, to look at before acting on it (no response body). */
  idempotencyKey: operatorProcedure
    .input(idempotencyKeyInput)
    .query(({ ctx, input }) => inspectIdempotencyKey(ctx, input)),
  /** Release a key that committed nothing (an expired lease, an `unknown` found harmless). */
  releaseIdempotencyKey: operatorProcedure
    .input(idempotencyKeyActionInput)
    .mutation(({ ctx, input }) => runKeyAction('release', ctx, input)),
  /** Evict a `completed` or `released` key before its retention ends (it runs again). */
  evictIdempotencyKey: operatorProcedure
    .input(idempotencyKeyActionInput)
    .mutation(({ ctx, input }) => runKeyAction('evict', ctx, input)),
  /** Capture an authorised payment, all or `amount` (see `requestAuthorizationAction`). */
  capturePayment: operatorProcedure
    .meta({ idempotency: { operation: 'ops.capturePayment', mode: 'atomic' } })
    .input(capturePaymentInput)
    .concat(operatorAttemptStory)
    .concat(idempotencyGuard)
    .mutation(({ ctx, input }) =>
      requestAuthorizationAction(moneyActionContext(ctx), 'capture', input),
    ),
  /** Void an authorised payment (release it all); guarded like `capturePayment`. */
  voidPayment: operatorProcedure
    .meta({ idempotency: { operation: 'ops.voidPayment', mode: 'atomic' } })
    .input(voidPaymentInput)
    .concat(operatorAttemptStory)
    .concat(idempotencyGuard)
    .mutation(({ ctx, input }) =>
      requestAuthorizationAction(moneyActionContext(ctx), 'void', input),
    ),
  /** Refund a succeeded or captured payment, all that is left or `amount` (`refundPayment`). */
  refundPayment: operatorProcedure
    .meta({ idempotency: { operation: 'ops.refundPayment', mode: 'atomic' } })
    .input(refundPaymentInput)
    .concat(operatorAttemptStory)
    .concat(idempotencyGuard)
    .mutation(({ ctx, input }) => refundPayment(moneyActionContext(ctx), input)),
  outbox: operatorProcedure
    .input(opsListInput)
    .query(({ ctx, input }) => listOutboxJobs(ctx, input)),
  ledger: operatorProcedure
    .input(opsListInput)
    .query(({ ctx, input }) => compareWithProcessorLedger(ctx, input)),
  /**
   * A payment's money (capturable, received, refunded) and its refunds, for the money buttons:
   * the same reads as `GET /api/v1/payments/{id}` and its refunds.
   */
  paymentMoney: operatorProcedure.input(paymentTimelineInput).query(async ({ ctx, input }) => ({
    payment: await readMerchantPayment(ctx.db, ctx.tenantId, input.paymentId),
    refunds: await listMerchantRefunds(ctx.db, ctx.tenantId, input.paymentId),
  })),
  paymentTimeline: operatorProcedure
    .input(paymentTimelineInput)
    .query(({ ctx, input }) => paymentTimeline(ctx, input)),
  stuckPayments: operatorProcedure
    .input(stuckPaymentsInput)
    .query(({ ctx, input }) => countStuckPayments(ctx, input)),
  /** The processor's webhook deliveries of the tenant (of one payment with `paymentId`). */
  webhookDeliveries: operatorProcedure
    .input(webhookDeliveriesInput)
    .query(({ ctx, input }) => webhookDeliveries(ctx, input)),
  /** Send one webhook event again; leased: the send is an HTTP call, stored after it. */
  resendWebhook: operatorProcedure
    .meta({ idempotency: { operation: 'ops.resendWebhook' } })
    .input(resendWebhookInput)
    .concat(idempotencyGuard)
    .mutation(({ ctx, input }) => resendWebhook(ctx, input)),
});

/** A money action's context from a guarded ops procedure's `ctx`, one place for all three. */
function moneyActionContext<TResult>(ctx: {
  db: Database;
  tenantId: string;
  principal: string;
  outboxNotify?: boolean;
  idempotency: {
    operation: string;
    key: string | undefined;
    complete(tx: Transaction, result: TResult): Promise<void>;
  };
}): MoneyActionContext<TResult> {
  return {
    db: ctx.db,
    tenantId: ctx.tenantId,
    principal: ctx.principal,
    requestKey: requestKeyOf(ctx.idempotency),
    notifyOutbox: ctx.outboxNotify,
    complete: (tx, result) => ctx.idempotency.complete(tx, result),
  };
}
