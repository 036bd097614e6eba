import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcessor } from './start-processor.ts';
import { adminClient } from './testing/admin-client.ts';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { stripeClient } from './testing/stripe-client.ts';
import { startTestProcessor } from './testing/test-processor.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;
let stripe: Stripe;

beforeAll(async () => {
  database = await createProcessorTestDatabase('manual_capture');
  processor = await startTestProcessor({ databaseUrl: database.url });
  stripe = stripeClient(processor.url, 'sk_test_tenant_a');
});

afterAll(async () => {
  await processor?.stop();
  await database?.drop();
});

const ledgerOf = async (paymentIntent: string) =>
  (await adminClient(processor.url).ledger({ payment_intent: paymentIntent })).data;

/** The objects of the events this processor queued for an object id, oldest first. */
async function eventsAbout(objectId: string) {
  const outbox = await adminClient(processor.url).webhookEvents('acct_tenant_a');
  return outbox.data
    .filter((e) => {
      const object = e.event.data.object;
      return object.id === objectId || object.payment_intent === objectId;
    })
    .map((e) => ({ type: e.type, object: e.event.data.object }));
}

const authorize = (amount: number) =>
  stripe.paymentIntents.create({
    amount,
    currency: 'usd',
    payment_method: 'pm_card_visa',
    capture_method: 'manual',
    confirm: true,
  });

describe('capture_method: manual through the official SDK', () => {
  it('confirm authorises (requires_capture, nothing booked); a partial capture takes part once and releases the rest', async () => {
    const authorized = await authorize(1000);
    expect(authorized).toMatchObject({
      status: 'requires_capture',
      capture_method: 'manual',
      amount_capturable: 1000,
      amount_received: 0,
    });
    expect(await ledgerOf(authorized.id)).toEqual([]);

    const captured = await stripe.paymentIntents.capture(authorized.id, {
      amount_to_capture: 600,
    });
    expect(captured).toMatchObject({
      status: 'succeeded',
      amount: 1000,
      amount_capturable: 0,
      amount_received: 600,
    });
    expect(await ledgerOf(authorized.id)).toMatchObject([{ kind: 'charge', amount: 600 }]);
    const events = await eventsAbout(authorized.id);
    // The capture's two events commit together (same `created`): their order is not defined.
    expect(events.map((e) => e.type).sort()).toEqual([
      'charge.captured',
      'payment_intent.amount_capturable_updated',
      'payment_intent.succeeded',
    ]);
    // Stripe shows the released rest as refunded on the charge.
    expect(events.find((e) => e.type === 'charge.captured')!.object).toMatchObject({
      captured: true,
      amount: 1000,
      amount_captured: 600,
      amount_refunded: 400,
      refunded: false,
    });

    await expect(stripe.paymentIntents.capture(authorized.id)).rejects.toMatchObject({
      type: 'StripeInvalidRequestError',
      code: 'payment_intent_unexpected_state',
      statusCode: 400,
    });
    await expect(stripe.paymentIntents.confirm(authorized.id)).rejects.toMatchObject({
      code: 'payment_intent_unexpected_state',
    });
    expect(await ledgerOf(authorized.id)).toHaveLength(1);
  });

  it('captures the whole authorisation without amount_to_capture; refuses more than is capturable', async () => {
    const authorized = await authorize(800);
    await expect(
      stripe.paymentIntents.capture(authorized.id, { amount_to_capture: 801 }),
    ).rejects.toMatchObject({
      code: 'amount_too_large',
      param: 'amount_to_capture',
      statusCode: 400,
    });
    expect(await stripe.paymentIntents.retrieve(authorized.id)).toMatchObject({
      status: 'requires_capture',
      amount_capturable: 800,
    });
    const captured = await stripe.paymentIntents.capture(authorized.id);
    expect(captured).toMatchObject({ status: 'succeeded', amount_received: 800 });
    expect(await ledgerOf(authorized.id)).toMatchObject([{ kind: 'charge', amount: 800 }]);
  });

  it('cancel voids an authorisation: canceled with its reason, nothing booked, no capture after', async () => {
    const authorized = await authorize(500);
    const canceled = await stripe.paymentIntents.cancel(authorized.id, {
      cancellation_reason: 'requested_by_customer',
    });
    expect(canceled).toMatchObject({
      status: 'canceled',
      cancellation_reason: 'requested_by_customer',
      amount_capturable: 0,
      amount_received: 0,
    });
    expect(canceled.canceled_at).toEqual(expect.any(Number));
    await expect(stripe.paymentIntents.capture(authorized.id)).rejects.toMatchObject({
      code: 'payment_intent_unexpected_state',
    });
    expect(await ledgerOf(authorized.id)).toEqual([]);
    expect((await eventsAbout(authorized.id)).map((e) => e.type)).toEqual([
      'payment_intent.amount_capturable_updated',
      'payment_intent.canceled',
    ]);
  });

  it('a capture under one Idempotency-Key runs once: the same key replays, other params are refused', async () => {
    const authorized = await authorize(900);
    const key = `capture-${authorized.id}`;
    const first = await stripe.paymentIntents.capture(
      authorized.id,
      { amount_to_capture: 700 },
      { idempotencyKey: key },
    );
    const replay = await stripe.paymentIntents.capture(
      authorized.id,
      { amount_to_capture: 700 },
      { idempotencyKey: key },
    );
    expect(replay.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(replay).toMatchObject({ id: first.id, status: 'succeeded', amount_received: 700 });
    await expect(
      stripe.paymentIntents.capture(
        authorized.id,
        { amount_to_capture: 800 },
        { idempotencyKey: key },
      ),
    ).rejects.toMatchObject({
      type: 'StripeIdempotencyError',
      code: 'idempotency_key_reused',
      statusCode: 400,
    });
    expect(await ledgerOf(authorized.id)).toMatchObject([
      { kind: 'charge', amount: 700, idempotency_key: key },
    ]);
  });

  it('refuses a capture or cancel its state does not allow, and any on an intent of another account or none', async () => {
    const charged = await stripe.paymentIntents.create({
      amount: 700,
      currency: 'usd',
      payment_method: 'pm_card_visa',
      confirm: true,
    });
    expect(charged.status).toBe('succeeded');
    const unexpectedState = { code: 'payment_intent_unexpected_state', statusCode: 400 };
    // An automatic charge has nothing to capture, and a charged intent cannot be canceled.
    await expect(stripe.paymentIntents.capture(charged.id)).rejects.toMatchObject(unexpectedState);
    await expect(stripe.paymentIntents.cancel(charged.id)).rejects.toMatchObject(unexpectedState);
    const canceled = await authorize(300);
    await stripe.paymentIntents.cancel(canceled.id);
    await expect(stripe.paymentIntents.cancel(canceled.id)).rejects.toMatchObject(unexpectedState);
    // Another account's intent is not found, like one that does not exist.
    const authorized = await authorize(400);
    const otherAccount = stripeClient(processor.url, 'sk_test_tenant_b');
    const missing = { code: 'resource_missing', statusCode: 404 };
    await expect(otherAccount.paymentIntents.capture(authorized.id)).rejects.toMatchObject(missing);
    await expect(otherAccount.paymentIntents.cancel(authorized.id)).rejects.toMatchObject(missing);
    await expect(stripe.paymentIntents.capture('pi_missing')).rejects.toMatchObject(missing);
    expect(await stripe.paymentIntents.retrieve(authorized.id)).toMatchObject({
      status: 'requires_capture',
      amount_capturable: 400,
    });
    expect(await ledgerOf(charged.id)).toMatchObject([{ kind: 'charge', amount: 700 }]);
    expect(await ledgerOf(canceled.id)).toEqual([]);
    expect(await ledgerOf(authorized.id)).toEqual([]);
  });

  it('refuses a refund of an uncaptured authorisation; after a partial capture refunds at most what was captured', async () => {
    const authorized = await authorize(1000);
    await expect(stripe.refunds.create({ payment_intent: authorized.id })).rejects.toMatchObject({
      code: 'charge_not_refundable',
      statusCode: 400,
    });
    await stripe.paymentIntents.capture(authorized.id, { amount_to_capture: 600 });
    await expect(
      stripe.refunds.create({ payment_intent: authorized.id, amount: 601 }),
    ).rejects.toMatchObject({ code: 'amount_too_large', statusCode: 400 });
    const refund = await stripe.refunds.create({ payment_intent: authorized.id });
    expect(refund).toMatchObject({ amount: 600, status: 'succeeded' });
  });
});

describe('an authorisation past its window', () => {
  it('is canceled (automatic) by the processor, and a capture after it is refused', async () => {
    // A second instance on the same database, with a short window.
    const shortWindow = await startTestProcessor({
      databaseUrl: database.url,
      authorizationWindowMs: 1_000,
    });
    try {
      const client = stripeClient(shortWindow.url, 'sk_test_tenant_a');
      const authorized = await client.paymentIntents.create({
        amount: 300,
        currency: 'usd',
        payment_method: 'pm_card_visa',
        capture_method: 'manual',
        confirm: true,
      });
      expect(authorized.status).toBe('requires_capture');
      let current = authorized;
      for (let i = 0; i < 100 && current.status === 'requires_capture'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        current = await client.paymentIntents.retrieve(authorized.id);
      }
      expect(current).toMatchObject({
        status: 'canceled',
        cancellation_reason: 'automatic',
        amount_capturable: 0,
      });
      await expect(client.paymentIntents.capture(authorized.id)).rejects.toMatchObject({
        code: 'payment_intent_unexpected_state',
      });
      expect(await ledgerOf(authorized.id)).toEqual([]);
    } finally {
      await shortWindow.stop();
    }
  });

  it('a capture after the window is refused even before the sweep has canceled it', async () => {
    // Authorised with a 1 s window by an instance that then stops (its sweep with it); the
    // main instance sweeps only every minute, so only the capture's own check stands.
    const shortWindow = await startTestProcessor({
      databaseUrl: database.url,
      authorizationWindowMs: 1_000,
    });
    const authorized = await stripeClient(
      shortWindow.url,
      'sk_test_tenant_a',
    ).paymentIntents.create({
      amount: 400,
      currency: 'usd',
      payment_method: 'pm_card_visa',
      capture_method: 'manual',
      confirm: true,
    });
    await shortWindow.stop();
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    await expect(stripe.paymentIntents.capture(authorized.id)).rejects.toMatchObject({
      code: 'payment_intent_unexpected_state',
    });
    expect(await ledgerOf(authorized.id)).toEqual([]);
  });
});
