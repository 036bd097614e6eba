import { eq, sql } from 'drizzle-orm';
import { charges, paymentIntents } from '../db/schema/index.ts';
import { readInteger } from '../stripe/form-params.ts';
import { invalidParam, unexpectedState } from '../stripe/stripe-error.ts';
import type { StripeOperation } from '../stripe/stripe-operation.ts';
import { enqueueEvent } from '../webhooks/enqueue-event.ts';
import { bookCharge, updateAndAnnounce } from './charge-payment-intent.ts';
import { loadPaymentIntent } from './read-payment-intents.ts';
import { renderCharge } from './render-objects.ts';

/**
 * `POST /v1/payment_intents/:id/capture` with an optional `amount_to_capture` (default: all of
 * `amount_capturable`), as at Stripe: an authorised intent (`requires_capture`) is captured
 * once and becomes `succeeded` with `amount_received` the captured amount; the rest of the
 * authorisation is released (the charge shows it refunded). Any other status, or an
 * authorisation past its window, is refused with `payment_intent_unexpected_state`; more
 * than is capturable with `amount_too_large`.
 *
 * Takes the intent's row lock like confirm and cancel: a capture racing a cancel or another
 * capture finds the state the first one left.
 */
export const capturePaymentIntent: StripeOperation = async (tx, input) => {
  const id = input.pathParams.id!;
  const amountToCapture = readInteger(input.params, 'amount_to_capture');
  const intent = await loadPaymentIntent(tx, input.account.id, id, { forUpdate: true });
  // By the database clock, which set `capture_before`.
  const [window] = await tx.execute<{ expired: boolean }>(
    sql`select coalesce(${paymentIntents.captureBefore} <= now(), false) as expired from ${paymentIntents} where ${paymentIntents.id} = ${id}`,
  );
  const expired = window?.expired === true;
  if (intent.status !== 'requires_capture' || expired) {
    const status = expired ? 'canceled (its authorization expired)' : intent.status;
    throw unexpectedState(
      `This PaymentIntent could not be captured because it has a status of ${status}. Only a PaymentIntent with one of the following statuses may be captured: requires_capture.`,
    );
  }
  const amount = amountToCapture ?? intent.amountCapturable;
  if (amount < 1) {
    throw invalidParam('amount_to_capture', 'amount_to_capture must be a positive integer.');
  }
  if (amount > intent.amountCapturable) {
    throw invalidParam(
      'amount_to_capture',
      'The payment could not be captured because the requested capture amount is greater than the authorized amount.',
      'amount_too_large',
    );
  }
  const chargeId = intent.latestCharge!;
  const [charge] = await tx
    .update(charges)
    .set({ captured: true, amountCaptured: amount, amountRefunded: intent.amount - amount })
    .where(eq(charges.id, chargeId))
    .returning();
  await bookCharge(tx, { intent, chargeId, amount, idempotencyKey: input.idempotencyKey });
  await enqueueEvent(tx, {
    accountId: intent.accountId,
    type: 'charge.captured',
    object: renderCharge(charge!),
    idempotencyKey: input.idempotencyKey,
  });
  const rendered = await updateAndAnnounce(
    tx,
    intent,
    { status: 'succeeded', amountReceived: amount, amountCapturable: 0, captureBefore: null },
    'payment_intent.succeeded',
    input.idempotencyKey,
  );
  return { status: 200, body: rendered };
};
