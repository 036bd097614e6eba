import { and, eq, lte, sql } from 'drizzle-orm';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import { charges, type PaymentIntentRow, paymentIntents } from '../db/schema/index.ts';
import { readString } from '../stripe/form-params.ts';
import { invalidParam, unexpectedState } from '../stripe/stripe-error.ts';
import type { StripeOperation } from '../stripe/stripe-operation.ts';
import { updateAndAnnounce } from './charge-payment-intent.ts';
import { loadPaymentIntent } from './read-payment-intents.ts';

/** Stripe's accepted `cancellation_reason` values. */
const CANCELLATION_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer', 'abandoned'];

/**
 * `POST /v1/payment_intents/:id/cancel`, with Stripe's semantics: an intent that has not
 * been charged (`requires_payment_method`, `requires_confirmation`, `requires_action`)
 * becomes `canceled` and can never be confirmed again; an authorised one
 * (`requires_capture`) is voided, its authorisation released; a `succeeded`, `processing`
 * or already `canceled` one is refused with `payment_intent_unexpected_state`.
 *
 * Cancel and confirm both take the intent's row lock before they read its status, so
 * they are serialised: a confirm that was held (slow network, the `delay` fault, which
 * waits before the transaction) and arrives after a cancel finds `canceled` and charges
 * nothing; a cancel that arrives after the charge committed finds `succeeded` and is
 * refused. "Canceled" is therefore proof that this intent never charged and never will.
 */
export const cancelPaymentIntent: StripeOperation = async (tx, input) => {
  const id = input.pathParams.id!;
  const reason = readString(input.params, 'cancellation_reason');
  if (reason !== undefined && !CANCELLATION_REASONS.includes(reason)) {
    throw invalidParam(
      'cancellation_reason',
      `Invalid cancellation_reason: must be one of ${CANCELLATION_REASONS.join(', ')}.`,
    );
  }
  const intent = await loadPaymentIntent(tx, input.account.id, id, { forUpdate: true });
  if (['succeeded', 'processing', 'canceled'].includes(intent.status)) {
    throw unexpectedState(
      `You cannot cancel this PaymentIntent because it has a status of ${intent.status}.`,
    );
  }
  const rendered = await voidPaymentIntent(tx, intent, reason ?? null, input.idempotencyKey);
  return { status: 200, body: rendered };
};

/**
 * Cancels a PaymentIntent that has moved no money (the caller checked its status and holds
 * its row lock): it becomes `canceled` with `reason`, and an authorisation it held
 * (`requires_capture`) is released, shown as Stripe does: the charge's whole amount
 * refunded, nothing capturable. Sends `payment_intent.canceled`.
 */
async function voidPaymentIntent(
  tx: ProcessorTransaction,
  intent: PaymentIntentRow,
  reason: string | null,
  idempotencyKey: string | null,
) {
  if (intent.status === 'requires_capture' && intent.latestCharge) {
    await tx
      .update(charges)
      .set({ amountRefunded: sql`${charges.amount}` })
      .where(eq(charges.id, intent.latestCharge));
  }
  return updateAndAnnounce(
    tx,
    intent,
    {
      status: 'canceled',
      cancellationReason: reason,
      canceledAt: sql`now()`,
      amountCapturable: 0,
      captureBefore: null,
      nextAction: null,
      actionIdempotencyKey: null,
    },
    'payment_intent.canceled',
    idempotencyKey,
  );
}

/**
 * A pass of the authorisation-expiry sweep: cancels every authorisation past its window
 * (`capture_before`, set at confirm from `PROCESSOR_AUTHORIZATION_WINDOW_MS` by the database
 * clock), as Stripe cancels an uncaptured PaymentIntent: `canceled`, `cancellation_reason:
 * automatic`, the hold released, `payment_intent.canceled` sent. Rows a capture or cancel
 * holds are skipped and seen on the next pass; a capture that gets the lock first after the
 * window refuses by itself. Returns how many it canceled.
 */
export function expireAuthorizations(db: ProcessorDatabase): Promise<number> {
  return db.transaction(async (tx) => {
    const due = await tx
      .select()
      .from(paymentIntents)
      .where(
        and(
          eq(paymentIntents.status, 'requires_capture'),
          lte(paymentIntents.captureBefore, sql`now()`),
        ),
      )
      .limit(100)
      .for('update', { skipLocked: true });
    for (const intent of due) await voidPaymentIntent(tx, intent, 'automatic', null);
    return due.length;
  });
}
