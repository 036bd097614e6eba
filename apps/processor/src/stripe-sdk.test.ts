import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcessor } from './start-processor.ts';
import { adminClient } from './testing/admin-client.ts';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { stripeClient } from './testing/stripe-client.ts';
import { startTestProcessor } from './testing/test-processor.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;
let stripe: Stripe;
const lines: string[] = [];

beforeAll(async () => {
  database = await createProcessorTestDatabase('sdk');
  processor = await startTestProcessor({
    databaseUrl: database.url,
    log: (line) => {
      lines.push(line);
      if (process.env.PROC_DEBUG) console.log(line);
    },
  });
  stripe = stripeClient(processor.url, 'sk_test_tenant_a');
});

afterAll(async () => {
  await processor?.stop();
  await database?.drop();
});

describe('the official stripe SDK against the mock processor', () => {
  it('creates and confirms in one call, and the ledger books exactly one charge', async () => {
    const intent = await stripe.paymentIntents.create({
      amount: 2599,
      currency: 'usd',
      payment_method: 'pm_card_visa',
      confirm: true,
      metadata: { order: 'sdk-1', tenant_note: 'a b&c=d' },
    });
    expect(intent).toMatchObject({
      object: 'payment_intent',
      amount: 2599,
      amount_received: 2599,
      currency: 'usd',
      status: 'succeeded',
      metadata: { order: 'sdk-1', tenant_note: 'a b&c=d' },
      last_payment_error: null,
    });
    expect(intent.id).toMatch(/^pi_/);
    expect(intent.latest_charge).toMatch(/^ch_/);
    const ledger = await adminClient(processor.url).ledger({ payment_intent: intent.id });
    expect(ledger.data).toHaveLength(1);
    expect(ledger.data[0]).toMatchObject({
      kind: 'charge',
      amount: 2599,
      payment_intent: intent.id,
    });
    // The SDK sends its own Idempotency-Key on POSTs when retries are enabled.
    expect(ledger.data[0]!.idempotency_key).toMatch(/^stripe-node-retry-/);
  });

  it('creates, then confirms with a separate call; retrieve shows the result', async () => {
    const created = await stripe.paymentIntents.create({
      amount: 1000,
      currency: 'eur',
      payment_method: 'pm_card_mastercard',
    });
    expect(created.status).toBe('requires_confirmation');
    const confirmed = await stripe.paymentIntents.confirm(created.id);
    expect(confirmed.status).toBe('succeeded');
    const retrieved = await stripe.paymentIntents.retrieve(created.id);
    expect(retrieved).toMatchObject({ id: created.id, status: 'succeeded', amount_received: 1000 });
    await expect(stripe.paymentIntents.confirm(created.id)).rejects.toMatchObject({
      type: 'StripeInvalidRequestError',
      code: 'payment_intent_unexpected_state',
      statusCode: 400,
    });
  });

  it('cancels an unconfirmed intent for good, and refuses to cancel a charged one', async () => {
    const created = await stripe.paymentIntents.create({
      amount: 1200,
      currency: 'usd',
      payment_method: 'pm_card_visa',
    });
    const canceled = await stripe.paymentIntents.cancel(created.id, {
      cancellation_reason: 'abandoned',
    });
    expect(canceled).toMatchObject({ id: created.id, status: 'canceled', amount_received: 0 });
    // A confirm that arrives after the cancel (late, or re-sent) charges nothing.
    await expect(stripe.paymentIntents.confirm(created.id)).rejects.toMatchObject({
      code: 'payment_intent_unexpected_state',
      statusCode: 400,
    });
    await expect(stripe.paymentIntents.cancel(created.id)).rejects.toMatchObject({
      code: 'payment_intent_unexpected_state',
    });
    expect((await adminClient(processor.url).ledger({ payment_intent: created.id })).data).toEqual(
      [],
    );

    const charged = await stripe.paymentIntents.create({
      amount: 1200,
      currency: 'usd',
      payment_method: 'pm_card_visa',
      confirm: true,
    });
    await expect(stripe.paymentIntents.cancel(charged.id)).rejects.toMatchObject({
      type: 'StripeInvalidRequestError',
      code: 'payment_intent_unexpected_state',
      statusCode: 400,
    });
    expect((await stripe.paymentIntents.retrieve(charged.id)).status).toBe('succeeded');
    await expect(
      stripe.paymentIntents.cancel(created.id, {
        cancellation_reason: 'bored' as Stripe.PaymentIntentCancelParams.CancellationReason,
      }),
    ).rejects.toMatchObject({ param: 'cancellation_reason', statusCode: 400 });
  });

  it('accepts raw test card numbers in payment_method_data', async () => {
    const intent = await stripe.paymentIntents.create({
      amount: 700,
      currency: 'usd',
      confirm: true,
      payment_method_data: { type: 'card', card: { number: '4242424242424242' } } as never,
    });
    expect(intent.status).toBe('succeeded');
  });

  const declines = [
    ['pm_card_chargeDeclined', 'card_declined', 'generic_decline'],
    ['pm_card_chargeDeclinedInsufficientFunds', 'card_declined', 'insufficient_funds'],
    ['pm_card_chargeDeclinedLostCard', 'card_declined', 'lost_card'],
    ['pm_card_chargeDeclinedExpiredCard', 'expired_card', 'expired_card'],
    ['pm_card_chargeDeclinedIncorrectCvc', 'incorrect_cvc', 'incorrect_cvc'],
    ['pm_card_chargeDeclinedProcessingError', 'processing_error', 'processing_error'],
  ] as const;
  it.each(declines)(
    '%s is declined with %s / %s (402) and nothing is booked',
    async (pm, code, declineCode) => {
      const error = await stripe.paymentIntents
        .create({
          amount: 500,
          currency: 'usd',
          payment_method: pm,
          confirm: true,
          metadata: { case: pm },
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(Stripe.errors.StripeCardError);
      const cardError = error as Stripe.errors.StripeCardError;
      expect(cardError).toMatchObject({ statusCode: 402, code, decline_code: declineCode });
      const intent = cardError.payment_intent!;
      expect(intent.status).toBe('requires_payment_method');
      expect(intent.last_payment_error).toMatchObject({ code, decline_code: declineCode });
      const ledger = await adminClient(processor.url).ledger({ payment_intent: intent.id });
      expect(ledger.data).toHaveLength(0);
    },
  );

  it('finds payments by metadata with search, and lists newest first', async () => {
    const order = `search-${Date.now()}`;
    const first = await stripe.paymentIntents.create({
      amount: 111,
      currency: 'usd',
      metadata: { order },
    });
    const second = await stripe.paymentIntents.create({
      amount: 222,
      currency: 'usd',
      metadata: { order, other: 'x' },
      payment_method: 'pm_card_visa',
      confirm: true,
    });
    const found = await stripe.paymentIntents.search({ query: `metadata['order']:'${order}'` });
    expect(found.object).toBe('search_result');
    expect(found.data.map((p) => p.id)).toEqual([second.id, first.id]);
    const succeeded = await stripe.paymentIntents.search({
      query: `metadata['order']:'${order}' AND status:'succeeded'`,
    });
    expect(succeeded.data.map((p) => p.id)).toEqual([second.id]);

    const page1 = await stripe.paymentIntents.list({ limit: 1 });
    expect(page1.data[0]!.id).toBe(second.id);
    expect(page1.has_more).toBe(true);
    const page2 = await stripe.paymentIntents.list({ limit: 1, starting_after: second.id });
    expect(page2.data[0]!.id).toBe(first.id);
  });

  it('refunds fully and partially; the ledger books each refund; over-refunds are refused', async () => {
    const intent = await stripe.paymentIntents.create({
      amount: 5000,
      currency: 'usd',
      payment_method: 'pm_card_visa',
      confirm: true,
    });
    const partial = await stripe.refunds.create({ payment_intent: intent.id, amount: 1500 });
    expect(partial).toMatchObject({
      object: 'refund',
      amount: 1500,
      status: 'succeeded',
      payment_intent: intent.id,
    });
    const rest = await stripe.refunds.create({ payment_intent: intent.id });
    expect(rest.amount).toBe(3500);
    await expect(
      stripe.refunds.create({ payment_intent: intent.id, amount: 1 }),
    ).rejects.toMatchObject({
      statusCode: 400,
      code: 'charge_already_refunded',
    });
    expect((await stripe.refunds.retrieve(partial.id)).id).toBe(partial.id);
    const ledger = await adminClient(processor.url).ledger({ payment_intent: intent.id });
    expect(ledger.data.map((e) => [e.kind, e.amount])).toEqual([
      ['charge', 5000],
      ['refund', 1500],
      ['refund', 3500],
    ]);
  });

  it('keeps accounts apart and refuses bad keys and bad params the way Stripe does', async () => {
    const intent = await stripe.paymentIntents.create({ amount: 300, currency: 'usd' });
    const other = stripeClient(processor.url, 'sk_test_tenant_b');
    await expect(other.paymentIntents.retrieve(intent.id)).rejects.toMatchObject({
      statusCode: 404,
      code: 'resource_missing',
    });
    await expect(
      stripeClient(processor.url, 'sk_test_nobody').paymentIntents.retrieve(intent.id),
    ).rejects.toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    await expect(stripe.paymentIntents.create({ currency: 'usd' } as never)).rejects.toMatchObject({
      statusCode: 400,
      code: 'parameter_missing',
      param: 'amount',
    });
  });
});
