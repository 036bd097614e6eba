import { msInterval } from '@once/postgres/sql';
import { eq, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { ProcessorTransaction } from '../db/client.ts';
import {
  charges,
  ledgerEntries,
  type PaymentIntentRow,
  paymentIntents,
} from '../db/schema/index.ts';
import {
  newObjectId,
  type OperationTiming,
  type StripeResult,
} from '../stripe/stripe-operation.ts';
import { enqueueEvent, type WebhookEventType } from '../webhooks/enqueue-event.ts';
import { renderPaymentIntent } from './render-objects.ts';
import { testCard } from './test-cards.ts';

/** An attempt that reached the card network leaves no 3-D Secure action open. */
const ACTION_DONE = { nextAction: null, actionIdempotencyKey: null };

/**
 * Charges a PaymentIntent inside the caller's transaction (the caller holds the row lock):
 * charge, ledger row, intent state and webhook event commit together or not at all. With
 * `capture_method: manual` an approved card is only authorised: nothing is booked yet.
 */
export async function chargePaymentIntent(
  tx: ProcessorTransaction,
  intent: PaymentIntentRow,
  request: {
    idempotencyKey: string | null;
    timing: OperationTiming;
    challengeBaseUrl: string;
    /** The shopper completed the 3-D Secure challenge this card requires. */
    authenticated?: boolean;
  },
): Promise<StripeResult> {
  const { idempotencyKey } = request;
  const card = testCard(intent.cardNumber ?? '');
  if (card.authenticate && !request.authenticated) {
    const rendered = await updateAndAnnounce(
      tx,
      intent,
      {
        status: 'requires_action',
        nextAction: challengeAction(intent, request.challengeBaseUrl),
        actionIdempotencyKey: idempotencyKey,
        lastPaymentError: null,
      },
      'payment_intent.requires_action',
      idempotencyKey,
    );
    return { status: 200, body: rendered };
  }
  const decline = card.declined;
  const chargeId = newObjectId('ch');
  const charge = {
    id: chargeId,
    accountId: intent.accountId,
    paymentIntentId: intent.id,
    amount: intent.amount,
    currency: intent.currency,
    paymentMethod: intent.paymentMethod,
    metadata: intent.metadata,
  };
  if (!decline && intent.captureMethod === 'manual') {
    await tx.insert(charges).values({ ...charge, status: 'succeeded', captured: false });
    const rendered = await updateAndAnnounce(
      tx,
      intent,
      {
        status: 'requires_capture',
        amountCapturable: intent.amount,
        captureBefore: sql`now() + ${msInterval(request.timing.authorizationWindowMs)}`,
        latestCharge: chargeId,
        lastPaymentError: null,
        ...ACTION_DONE,
      },
      'payment_intent.amount_capturable_updated',
      idempotencyKey,
    );
    return { status: 200, body: rendered };
  }
  if (!decline) {
    await tx
      .insert(charges)
      .values({ ...charge, status: 'succeeded', amountCaptured: intent.amount });
    await bookCharge(tx, { intent, chargeId, amount: intent.amount, idempotencyKey });
    const rendered = await updateAndAnnounce(
      tx,
      intent,
      {
        status: 'succeeded',
        amountReceived: intent.amount,
        latestCharge: chargeId,
        lastPaymentError: null,
        ...ACTION_DONE,
      },
      'payment_intent.succeeded',
      idempotencyKey,
    );
    return { status: 200, body: rendered };
  }
  await tx.insert(charges).values({
    ...charge,
    status: 'failed',
    failureCode: decline.code,
    failureMessage: decline.message,
    declineCode: decline.declineCode,
  });
  const lastPaymentError = {
    type: 'card_error',
    code: decline.code,
    decline_code: decline.declineCode,
    message: decline.message,
    ...(decline.param ? { param: decline.param } : {}),
    charge: chargeId,
    doc_url: `https://stripe.com/docs/error-codes/${decline.code.replaceAll('_', '-')}`,
    payment_method: { id: intent.paymentMethod, object: 'payment_method', type: 'card' },
  };
  // As at Stripe, a failed attempt detaches the payment method: the customer must supply another.
  const rendered = await updateAndAnnounce(
    tx,
    intent,
    {
      status: 'requires_payment_method',
      paymentMethod: null,
      cardNumber: null,
      latestCharge: chargeId,
      lastPaymentError,
      ...ACTION_DONE,
    },
    'payment_intent.payment_failed',
    idempotencyKey,
  );
  return { status: 402, body: { error: { ...lastPaymentError, payment_intent: rendered } } };
}

/** Applies an outcome to the PaymentIntent and queues its webhook event. */
export async function updateAndAnnounce(
  tx: ProcessorTransaction,
  intent: PaymentIntentRow,
  changes: PgUpdateSetSource<typeof paymentIntents>,
  eventType: WebhookEventType,
  idempotencyKey: string | null,
): Promise<ReturnType<typeof renderPaymentIntent>> {
  const [updated] = await tx
    .update(paymentIntents)
    .set(changes)
    .where(eq(paymentIntents.id, intent.id))
    .returning();
  const rendered = renderPaymentIntent(updated!);
  await enqueueEvent(tx, {
    accountId: intent.accountId,
    type: eventType,
    object: rendered,
    idempotencyKey,
  });
  return rendered;
}

/** Books money the customer paid: the ledger's one `charge` row for this charge. */
export async function bookCharge(
  tx: ProcessorTransaction,
  booking: {
    intent: PaymentIntentRow;
    chargeId: string;
    amount: number;
    idempotencyKey: string | null;
  },
): Promise<void> {
  const { intent } = booking;
  await tx.insert(ledgerEntries).values({
    accountId: intent.accountId,
    kind: 'charge',
    paymentIntentId: intent.id,
    chargeId: booking.chargeId,
    amount: booking.amount,
    currency: intent.currency,
    idempotencyKey: booking.idempotencyKey,
    metadata: intent.metadata,
  });
}

/**
 * Stripe's `next_action` for a card that requires 3-D Secure: with a `return_url`,
 * `redirect_to_url` (send the shopper to `url`; they come back to `return_url`); without one,
 * `use_stripe_sdk` (Stripe.js opens the challenge itself), here pointing at the same hosted
 * page. The page is this processor's own (`http/three-d-secure.ts`), found by the intent's id
 * and client secret.
 */
function challengeAction(
  intent: PaymentIntentRow,
  challengeBaseUrl: string,
): Record<string, unknown> {
  const url = new URL(`/three_d_secure/${intent.id}`, challengeBaseUrl);
  url.searchParams.set('client_secret', intent.clientSecret);
  if (intent.returnUrl) {
    return {
      type: 'redirect_to_url',
      redirect_to_url: { url: url.toString(), return_url: intent.returnUrl },
    };
  }
  return {
    type: 'use_stripe_sdk',
    use_stripe_sdk: { type: 'three_d_secure_redirect', stripe_js: url.toString() },
  };
}
