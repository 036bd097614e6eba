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
  database = await createProcessorTestDatabase('refunds');
  // Asynchronous test-card refunds change status half a second after they are made.
  processor = await startTestProcessor({ databaseUrl: database.url, refundSettleMs: 500 });
  stripe = stripeClient(processor.url, 'sk_test_tenant_a');
});

afterAll(async () => {
  await processor?.stop();
  await database?.drop();
});

const pay = (amount: number, paymentMethod = 'pm_card_visa') =>
  stripe.paymentIntents.create({
    amount,
    currency: 'usd',
    payment_method: paymentMethod,
    confirm: true,
  });

const ledgerOf = async (paymentIntent: string) =>
  (await adminClient(processor.url).ledger({ payment_intent: paymentIntent })).data;

async function eventTypesAbout(objectId: string): Promise<string[]> {
  const outbox = await adminClient(processor.url).webhookEvents('acct_tenant_a');
  return outbox.data
    .filter((e) => {
      const object = e.event.data.object;
      return object.id === objectId || object.payment_intent === objectId;
    })
    .map((e) => e.type);
}

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 100 && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await read();
  }
  return value;
}

describe('refunds through the official SDK', () => {
  it('refunds in several parts, never more than was received; lists them by payment intent', async () => {
    const intent = await pay(1000);
    const first = await stripe.refunds.create({ payment_intent: intent.id, amount: 300 });
    expect(first).toMatchObject({
      object: 'refund',
      amount: 300,
      status: 'succeeded',
      payment_intent: intent.id,
    });
    await expect(
      stripe.refunds.create({ payment_intent: intent.id, amount: 701 }),
    ).rejects.toMatchObject({ code: 'amount_too_large', param: 'amount', statusCode: 400 });
    const second = await stripe.refunds.create({ payment_intent: intent.id, amount: 200 });
    const rest = await stripe.refunds.create({ payment_intent: intent.id });
    expect(rest.amount).toBe(500);
    await expect(stripe.refunds.create({ payment_intent: intent.id })).rejects.toMatchObject({
      code: 'charge_already_refunded',
      statusCode: 400,
    });

    const listed = await stripe.refunds.list({ payment_intent: intent.id });
    expect(listed.data.map((r) => r.id)).toEqual([rest.id, second.id, first.id]);
    const page = await stripe.refunds.list({ payment_intent: intent.id, limit: 2 });
    expect(page).toMatchObject({ has_more: true });
    const next = await stripe.refunds.list({
      payment_intent: intent.id,
      starting_after: page.data[1]!.id,
    });
    expect(next.data.map((r) => r.id)).toEqual([first.id]);
    expect((await stripe.refunds.retrieve(second.id)).amount).toBe(200);

    const refunds = (await ledgerOf(intent.id)).filter((row) => row.kind === 'refund');
    expect(refunds.map((row) => row.amount)).toEqual([300, 200, 500]);
    const types = await eventTypesAbout(intent.id);
    expect(types.filter((t) => t === 'refund.created')).toHaveLength(3);
    expect(types.filter((t) => t === 'charge.refunded')).toHaveLength(3);
  });

  it('refuses a refund of an intent of another account or none, and of one that charged nothing', async () => {
    const intent = await pay(500);
    const missing = { code: 'resource_missing', statusCode: 404 };
    const otherAccount = stripeClient(processor.url, 'sk_test_tenant_b');
    await expect(otherAccount.refunds.create({ payment_intent: intent.id })).rejects.toMatchObject(
      missing,
    );
    await expect(stripe.refunds.create({ payment_intent: 'pi_missing' })).rejects.toMatchObject(
      missing,
    );
    const declined = await stripe.paymentIntents
      .create({
        amount: 500,
        currency: 'usd',
        payment_method: 'pm_card_chargeDeclined',
        confirm: true,
      })
      .catch((error: { payment_intent?: { id: string } }) => error.payment_intent!);
    await expect(stripe.refunds.create({ payment_intent: declined.id })).rejects.toMatchObject({
      code: 'charge_not_refundable',
      statusCode: 400,
    });
    expect((await ledgerOf(intent.id)).filter((row) => row.kind === 'refund')).toEqual([]);
  });

  it('a refund under one Idempotency-Key refunds once: the same key replays, other params are refused', async () => {
    const intent = await pay(800);
    const key = `refund-${intent.id}`;
    const first = await stripe.refunds.create(
      { payment_intent: intent.id, amount: 100 },
      { idempotencyKey: key },
    );
    const replay = await stripe.refunds.create(
      { payment_intent: intent.id, amount: 100 },
      { idempotencyKey: key },
    );
    expect(replay.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(replay.id).toBe(first.id);
    await expect(
      stripe.refunds.create({ payment_intent: intent.id, amount: 200 }, { idempotencyKey: key }),
    ).rejects.toMatchObject({
      type: 'StripeIdempotencyError',
      code: 'idempotency_key_reused',
      statusCode: 400,
    });
    expect((await ledgerOf(intent.id)).filter((row) => row.kind === 'refund')).toMatchObject([
      { amount: 100, idempotency_key: key },
    ]);
  });

  it('pm_card_pendingRefund: the refund starts pending and later succeeds (refund.updated)', async () => {
    const intent = await pay(600, 'pm_card_pendingRefund');
    const refund = await stripe.refunds.create({ payment_intent: intent.id });
    expect(refund.status).toBe('pending');
    const settled = await eventually(
      () => stripe.refunds.retrieve(refund.id),
      (r) => r.status !== 'pending',
    );
    expect(settled.status).toBe('succeeded');
    expect(await eventTypesAbout(refund.id)).toEqual(
      expect.arrayContaining(['refund.created', 'refund.updated']),
    );
    expect((await ledgerOf(intent.id)).filter((row) => row.kind === 'refund')).toMatchObject([
      { amount: 600 },
    ]);
  });

  it('pm_card_refundFail: the refund succeeds, later fails (refund.failed) and the money is back', async () => {
    const intent = await pay(700, 'pm_card_refundFail');
    const refund = await stripe.refunds.create({ payment_intent: intent.id });
    expect(refund.status).toBe('succeeded');
    const failed = await eventually(
      () => stripe.refunds.retrieve(refund.id),
      (r) => r.status !== 'succeeded',
    );
    expect(failed).toMatchObject({ status: 'failed', failure_reason: expect.any(String) });
    expect(await eventTypesAbout(refund.id)).toEqual(
      expect.arrayContaining(['refund.created', 'refund.failed']),
    );
    const refundRows = (await ledgerOf(intent.id)).filter((row) => row.kind === 'refund');
    expect(refundRows.map((row) => row.amount)).toEqual([700, -700]);
    // The money came back: it can be refunded again.
    const again = await stripe.refunds.create({ payment_intent: intent.id, amount: 700 });
    expect(again.amount).toBe(700);
  });
});
