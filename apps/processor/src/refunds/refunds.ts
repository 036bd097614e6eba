import { msInterval } from '@once/postgres/sql';
import { and, desc, eq, isNotNull, lte, type SQL, sql } from 'drizzle-orm';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import { charges, ledgerEntries, refunds } from '../db/schema/index.ts';
import { loadPaymentIntent } from '../payments/read-payment-intents.ts';
import { renderCharge, renderRefund } from '../payments/render-objects.ts';
import { testCard } from '../payments/test-cards.ts';
import { readInteger, readListLimit, readMetadata, readString } from '../stripe/form-params.ts';
import {
  invalidParam,
  missingParam,
  resourceMissing,
  StripeApiError,
} from '../stripe/stripe-error.ts';
import {
  afterCursor,
  loadOwned,
  newObjectId,
  type ReadOperation,
  type StripeOperation,
  stripeListPage,
} from '../stripe/stripe-operation.ts';
import { enqueueEvent } from '../webhooks/enqueue-event.ts';

const REASONS = new Set(['duplicate', 'fraudulent', 'requested_by_customer']);

/**
 * `POST /v1/refunds` with `payment_intent` (or `charge`) and an optional partial `amount`
 * (default: all that is left). Several refunds may share a charge; together they never
 * exceed what was captured: the charge row is locked, so concurrent refunds are serialised,
 * and one over the rest is refused with `amount_too_large`. The money leaves at once (a
 * ledger `refund` row); `refund.created` and `charge.refunded` are sent. A charge on one of
 * Stripe's asynchronous-refund test cards gives a refund that later changes status
 * (`settleRefunds`).
 */
export const createRefund: StripeOperation = async (tx, input) => {
  const { account, params, idempotencyKey } = input;
  const paymentIntentId = readString(params, 'payment_intent');
  const chargeIdParam = readString(params, 'charge');
  if (!paymentIntentId && !chargeIdParam) throw missingParam('payment_intent');
  const reason = readString(params, 'reason') ?? null;
  if (reason !== null && !REASONS.has(reason))
    throw invalidParam('reason', `Invalid reason: ${reason}`);
  // Only captured money is refundable: an authorisation is released by canceling its intent.
  let chargeCondition = and(
    eq(charges.accountId, account.id),
    eq(charges.status, 'succeeded'),
    eq(charges.captured, true),
  );
  if (paymentIntentId) {
    await loadPaymentIntent(tx, account.id, paymentIntentId, { param: 'payment_intent' });
    chargeCondition = and(chargeCondition, eq(charges.paymentIntentId, paymentIntentId));
  } else {
    chargeCondition = and(chargeCondition, eq(charges.id, chargeIdParam!));
  }
  const [charge] = await tx.select().from(charges).where(chargeCondition).for('update');
  if (!charge) {
    if (chargeIdParam && !paymentIntentId) throw resourceMissing('charge', chargeIdParam, 'charge');
    throw new StripeApiError(400, {
      type: 'invalid_request_error',
      code: 'charge_not_refundable',
      param: 'payment_intent',
      message: `This PaymentIntent (${paymentIntentId}) does not have a successful charge to refund.`,
    });
  }
  const remaining = charge.amount - charge.amountRefunded;
  if (remaining <= 0) {
    throw new StripeApiError(400, {
      type: 'invalid_request_error',
      code: 'charge_already_refunded',
      message: `Charge ${charge.id} has already been refunded.`,
    });
  }
  const amount = readInteger(params, 'amount') ?? remaining;
  if (amount < 1 || amount > remaining) {
    throw invalidParam(
      'amount',
      `Refund amount (${amount}) is greater than unrefunded amount on charge (${remaining}).`,
      'amount_too_large',
    );
  }
  const intent = await loadPaymentIntent(tx, account.id, charge.paymentIntentId);
  const behavior = testCard(intent.cardNumber ?? '').refund ?? 'immediate';
  const refundId = newObjectId('re');
  const [refund] = await tx
    .insert(refunds)
    .values({
      id: refundId,
      accountId: account.id,
      chargeId: charge.id,
      paymentIntentId: charge.paymentIntentId,
      amount,
      currency: charge.currency,
      status: behavior === 'pending_then_succeeded' ? 'pending' : 'succeeded',
      reason,
      metadata: readMetadata(params),
      ...(behavior === 'immediate'
        ? {}
        : {
            settlesAt: sql`now() + ${msInterval(input.timing.refundSettleMs)}`,
            settlesTo: behavior === 'pending_then_succeeded' ? 'succeeded' : 'failed',
          }),
    })
    .returning();
  const updatedCharge = await bookRefund(tx, refund!, amount, idempotencyKey);
  const rendered = renderRefund(refund!);
  await enqueueEvent(tx, {
    accountId: account.id,
    type: 'refund.created',
    object: rendered,
    idempotencyKey,
  });
  await enqueueEvent(tx, {
    accountId: account.id,
    type: 'charge.refunded',
    object: renderCharge(updatedCharge),
    idempotencyKey,
  });
  return { status: 200, body: rendered };
};

/**
 * Moves `amount` of a refund's charge back to the customer (negative: the money of a failed
 * refund returning): the charge's `amount_refunded` and a ledger `refund` row, so the refund
 * rows of a charge always sum to what left it. Returns the charge as it is now.
 */
async function bookRefund(
  tx: ProcessorTransaction,
  refund: typeof refunds.$inferSelect,
  amount: number,
  idempotencyKey: string | null,
): Promise<typeof charges.$inferSelect> {
  const [charge] = await tx
    .update(charges)
    .set({ amountRefunded: sql`${charges.amountRefunded} + ${amount}` })
    .where(eq(charges.id, refund.chargeId))
    .returning();
  await tx.insert(ledgerEntries).values({
    accountId: refund.accountId,
    kind: 'refund',
    paymentIntentId: refund.paymentIntentId,
    chargeId: refund.chargeId,
    refundId: refund.id,
    amount,
    currency: refund.currency,
    idempotencyKey,
    metadata: charge!.metadata,
  });
  return charge!;
}

/**
 * A pass of the refund-settlement sweep: moves the asynchronous refunds that are due to their
 * final status, as Stripe's test cards do "some time later": a `pending` one becomes
 * `succeeded` (`refund.updated`); a `succeeded` one becomes `failed` (`refund.failed`): the
 * money comes back, so the charge's `amount_refunded` drops by it and the ledger books the
 * return as a `refund` row of the negative amount. Returns how many it settled.
 */
export function settleRefunds(db: ProcessorDatabase): Promise<number> {
  return db.transaction(async (tx) => {
    const due = await tx
      .select()
      .from(refunds)
      .where(and(isNotNull(refunds.settlesAt), lte(refunds.settlesAt, sql`now()`)))
      .limit(100)
      .for('update', { skipLocked: true });
    for (const refund of due) {
      const failed = refund.settlesTo === 'failed';
      const [settled] = await tx
        .update(refunds)
        .set({
          status: failed ? 'failed' : 'succeeded',
          failureReason: failed ? 'unknown' : null,
          settlesAt: null,
          settlesTo: null,
        })
        .where(eq(refunds.id, refund.id))
        .returning();
      if (failed) await bookRefund(tx, refund, -refund.amount, null);
      await enqueueEvent(tx, {
        accountId: refund.accountId,
        type: failed ? 'refund.failed' : 'refund.updated',
        object: renderRefund(settled!),
        idempotencyKey: null,
      });
    }
    return due.length;
  });
}

/** `GET /v1/refunds/:id` */
export const retrieveRefund: ReadOperation = async (db, { account, pathParams }) => ({
  status: 200,
  body: renderRefund(
    await loadOwned(db, refunds, { name: 'refund', id: pathParams.id!, accountId: account.id }),
  ),
});

/** `GET /v1/refunds`: newest first; `payment_intent`, `charge`, `limit` (1-100), `starting_after`. */
export const listRefunds: ReadOperation = async (db, { account, params }) => {
  const limit = readListLimit(params);
  const conditions: (SQL | undefined)[] = [eq(refunds.accountId, account.id)];
  const paymentIntent = readString(params, 'payment_intent');
  if (paymentIntent) conditions.push(eq(refunds.paymentIntentId, paymentIntent));
  const charge = readString(params, 'charge');
  if (charge) conditions.push(eq(refunds.chargeId, charge));
  conditions.push(
    await afterCursor(db, refunds, { name: 'refund', accountId: account.id, params }),
  );
  const rows = await db
    .select()
    .from(refunds)
    .where(and(...conditions))
    .orderBy(desc(refunds.createdAt), desc(refunds.id))
    .limit(limit + 1);
  return stripeListPage(rows, limit, renderRefund, '/v1/refunds');
};
