import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createProcessorWebhookHandler,
  processorClientsFrom,
  type ServedHandler,
  serveFetch,
} from '@once/web/testing';
import { ledgerChargesFor, waitForTerminal } from '@once/worker/testing';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from 'vitest';
import { startTestSystem, type TestSystem } from './support/test-system.ts';

/**
 * Whoever holds PROCESSOR_WEBHOOK_SECRET (it leaked, or it is a demo value someone kept) can
 * sign any event. Such an event must not settle anything the processor does not confirm:
 * the receiver settles only the intent recorded on the payment, as the real processor
 * returns it when asked. Genuine deliveries, signed by the processor itself, still settle.
 */
const WEBHOOK_SECRET = 'whsec_test_forgery';
const TENANT_KEY = 'sk_test_tenant_a';

type Payment = { paymentId: string; amount: number };
type Delivery = { body: string; signature: string };

let system: TestSystem;
/** Where the processor delivers its own webhooks: collected, forwarded only when a test says. */
let sink: ServedHandler;
const delivered: Delivery[] = [];
let sdk: Stripe;
let log: MockInstance<typeof console.log>;

beforeAll(async () => {
  log = vi.spyOn(console, 'log');
  sink = await serveFetch(async (request) => {
    delivered.push({
      body: await request.text(),
      signature: request.headers.get('stripe-signature') ?? '',
    });
    return Response.json({ received: true });
  });
  system = await startTestSystem({
    label: 'webhook_forgery',
    webhookSecret: WEBHOOK_SECRET,
    webhookUrl: sink.url,
  });
  const url = new URL(system.processor.url);
  sdk = new Stripe(TENANT_KEY, {
    host: url.hostname,
    port: Number(url.port),
    protocol: 'http',
    telemetry: false,
  });
}, 120_000);

afterAll(async () => {
  await system?.close();
  await sink?.close();
  log?.mockRestore();
});

async function newPayment(): Promise<Payment> {
  const response = await fetch(`${system.web.url}/api/v1/payments`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: 'Bearer once_test_tenant_a',
      'idempotency-key': randomUUID(),
    },
    body: JSON.stringify({ lines: [{ productId: 'bookmark', quantity: 1 }] }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as Payment;
}

/**
 * What the worker's step A does (create the intent, record its id on the payment) and,
 * with `paymentMethod`, step B (confirm it) against the real processor.
 */
async function recordIntent(payment: Payment, paymentMethod?: string): Promise<string> {
  const intent = await sdk.paymentIntents.create({
    amount: payment.amount,
    currency: 'usd',
    payment_method: paymentMethod ?? 'pm_card_visa',
    metadata: { payment_id: payment.paymentId, tenant_id: 'tenant_a' },
  });
  await system.app.client.sql`
    update payments set processor_payment_intent_id = ${intent.id} where id = ${payment.paymentId}`;
  if (paymentMethod) {
    await sdk.paymentIntents
      .confirm(intent.id, { payment_method: paymentMethod })
      .catch((error: unknown) => {
        if (!(error instanceof Stripe.errors.StripeCardError)) throw error;
      });
  }
  return intent.id;
}

/** A `payment_intent.*` event as anyone holding the webhook secret can write and sign it. */
function forgedEvent(
  type: 'payment_intent.succeeded' | 'payment_intent.payment_failed',
  payment: Payment,
  intentId: string,
  extra: Record<string, unknown> = {},
) {
  return {
    id: `evt_${randomUUID().replaceAll('-', '')}`,
    object: 'event',
    type,
    account: 'acct_tenant_a',
    created: Math.floor(Date.now() / 1000),
    data: {
      object: {
        id: intentId,
        object: 'payment_intent',
        status: type === 'payment_intent.succeeded' ? 'succeeded' : 'requires_payment_method',
        amount: payment.amount,
        currency: 'usd',
        metadata: { payment_id: payment.paymentId, tenant_id: 'tenant_a' },
        ...extra,
      },
    },
  };
}

const deliver = (payload: string, signature?: string, url = system.web.url) =>
  fetch(`${url}/api/webhooks/processor`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'stripe-signature':
        signature ?? Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
    },
    body: payload,
  });

const paymentRow = async (id: string) =>
  (
    await system.app.client.sql<
      {
        status: string;
        updated_at: Date;
        failure_code: string | null;
        processor_payment_intent_id: string | null;
      }[]
    >`select status, updated_at, failure_code, processor_payment_intent_id from payments where id = ${id}`
  )[0]!;

const jobStatus = async (paymentId: string) =>
  (
    await system.app.client.sql<{ status: string }[]>`
    select status from outbox_jobs where payment_id = ${paymentId}`
  )[0]?.status;

const logged = () => log.mock.calls.map((call) => String(call[0]));

/** The processor's own signed delivery of `type` for `intentId`, once it has sent it. */
async function processorsDelivery(type: string, intentId: string): Promise<Delivery> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const found = delivered.find((d) => {
      const event = JSON.parse(d.body) as { type: string; data: { object: { id: string } } };
      return event.type === type && event.data.object.id === intentId;
    });
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`the processor never delivered ${type} ${intentId}`);
    await sleep(50);
  }
}

describe('a webhook signed with the right secret is a hint, never a settlement', () => {
  it('a forged payment_intent.succeeded for an unpaid payment (no intent recorded) changes nothing', async () => {
    const payment = await newPayment();
    const before = await paymentRow(payment.paymentId);
    const response = await deliver(
      JSON.stringify(forgedEvent('payment_intent.succeeded', payment, `pi_${payment.paymentId}`)),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ ignored: 'not_the_recorded_intent' });
    expect(await paymentRow(payment.paymentId)).toEqual(before);
    // The charge job is still there for a worker to run: nothing told it the money moved.
    expect(await jobStatus(payment.paymentId)).toBe('pending');
    expect(logged()).toContainEqual(
      expect.stringMatching(
        /ignored: intent pi_\S+ is not the one recorded on payment .* \(none recorded yet\)/,
      ),
    );
  });

  it('a forged success naming the recorded intent of a charge not made yet changes nothing: the processor says so', async () => {
    const payment = await newPayment();
    const intentId = await recordIntent(payment);
    const before = await paymentRow(payment.paymentId);
    const response = await deliver(
      JSON.stringify(forgedEvent('payment_intent.succeeded', payment, intentId)),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ ignored: 'intent_not_final' });
    expect(await paymentRow(payment.paymentId)).toEqual(before);
    expect(logged()).toContainEqual(
      expect.stringContaining(`the processor says ${intentId} is requires_confirmation`),
    );
  });

  it('a misrouted intent (another payment’s, really succeeded) changes nothing', async () => {
    const unpaid = await newPayment();
    await recordIntent(unpaid);
    const paid = await newPayment();
    const paidIntent = await recordIntent(paid, 'pm_card_visa');
    const before = await paymentRow(unpaid.paymentId);
    const response = await deliver(
      JSON.stringify(forgedEvent('payment_intent.succeeded', unpaid, paidIntent)),
    );
    expect(await response.json()).toMatchObject({ ignored: 'not_the_recorded_intent' });
    expect(await paymentRow(unpaid.paymentId)).toEqual(before);
    // Another tenant's payment named from tenant_a's account is not found either.
    const foreign = forgedEvent('payment_intent.succeeded', unpaid, paidIntent);
    foreign.data.object.metadata = { payment_id: unpaid.paymentId, tenant_id: 'tenant_b' };
    expect((await deliver(JSON.stringify(foreign))).status).toBe(200);
    expect(await paymentRow(unpaid.paymentId)).toEqual(before);
  });

  it('settles from the intent the processor returns, not from the body: "succeeded" for a declined charge records the decline', async () => {
    const payment = await newPayment();
    const intentId = await recordIntent(payment, 'pm_card_chargeDeclinedInsufficientFunds');
    const response = await deliver(
      JSON.stringify(forgedEvent('payment_intent.succeeded', payment, intentId)),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      outcome: { kind: 'applied', status: 'declined' },
    });
    expect(await paymentRow(payment.paymentId)).toMatchObject({
      status: 'declined',
      failure_code: 'insufficient_funds',
    });
  });

  it('the processor cannot be asked: 503 with Retry-After and nothing changes; the redelivery settles', async () => {
    const payment = await newPayment();
    const intentId = await recordIntent(payment, 'pm_card_visa');
    const payload = JSON.stringify(forgedEvent('payment_intent.succeeded', payment, intentId));
    const unreachable = createProcessorWebhookHandler(async () => system.runtime, {
      processorFor: processorClientsFrom({
        PROCESSOR_URL: 'http://127.0.0.1:9',
        PROCESSOR_ADMIN_TOKEN: 'unused-by-the-receiver',
      }),
    });
    const lonely = await serveFetch(unreachable);
    try {
      const refused = await deliver(payload, undefined, lonely.url);
      expect(refused.status).toBe(503);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await refused.json()).toMatchObject({ code: 'processor_unavailable' });
    } finally {
      await lonely.close();
    }
    expect((await paymentRow(payment.paymentId)).status).toBe('processing');
    const again = await deliver(payload);
    expect(await again.json()).toMatchObject({ outcome: { kind: 'applied', status: 'succeeded' } });
  });
});

describe('genuine deliveries still settle', () => {
  it("the processor's own signed payment_intent.succeeded settles the payment", async () => {
    const payment = await newPayment();
    const intentId = await recordIntent(payment, 'pm_card_visa');
    const genuine = await processorsDelivery('payment_intent.succeeded', intentId);
    const response = await deliver(genuine.body, genuine.signature);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      outcome: { kind: 'applied', status: 'succeeded' },
    });
    expect(await paymentRow(payment.paymentId)).toMatchObject({
      status: 'succeeded',
      processor_payment_intent_id: intentId,
    });
  });

  it('applies a good event once even when delivered twice, and never moves a terminal state back', async () => {
    const payment = await newPayment();
    const intentId = await recordIntent(payment, 'pm_card_visa');
    const event = forgedEvent('payment_intent.succeeded', payment, intentId);
    const payload = JSON.stringify(event);
    const first = await deliver(payload);
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({
      outcome: { kind: 'applied', status: 'succeeded' },
    });
    const afterFirst = await paymentRow(payment.paymentId);
    expect(afterFirst.status).toBe('succeeded');

    const second = await deliver(payload);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await paymentRow(payment.paymentId)).toEqual(afterFirst);
    const [keys] = await system.app.client.sql<{ n: number }[]>`
      select count(*)::int as n from idempotency_keys where operation = 'webhooks.processor' and key = ${event.id}`;
    expect(keys!.n).toBe(1);

    // A late, reordered failure event for the same intent cannot undo the success.
    const late = await deliver(
      JSON.stringify(
        forgedEvent('payment_intent.payment_failed', payment, intentId, {
          last_payment_error: { code: 'card_declined', decline_code: 'generic_decline' },
        }),
      ),
    );
    expect(await late.json()).toMatchObject({
      outcome: { kind: 'already_terminal', status: 'succeeded' },
    });
    expect((await paymentRow(payment.paymentId)).status).toBe('succeeded');
    // The timeline: applied, the redelivery as a duplicate, the late event ignored.
    const events = await system.app.client.sql<{ actor: string; kind: string }[]>`
      select actor, kind from payment_events
      where payment_id = ${payment.paymentId} and kind like 'webhook.%' order by seq`;
    expect(events.map((e) => e.kind)).toEqual([
      'webhook.applied',
      'webhook.duplicate',
      'webhook.ignored',
    ]);
    expect(events.every((e) => e.actor === 'processor')).toBe(true);
  });

  it('records a decline with its code', async () => {
    const payment = await newPayment();
    const intentId = await recordIntent(payment, 'pm_card_chargeDeclinedInsufficientFunds');
    const genuine = await processorsDelivery('payment_intent.payment_failed', intentId);
    const response = await deliver(genuine.body, genuine.signature);
    expect(response.status).toBe(200);
    expect(await paymentRow(payment.paymentId)).toMatchObject({
      status: 'declined',
      failure_code: 'insufficient_funds',
    });
  });
});

describe('after a forged success, the worker still charges', () => {
  it('the payment a forged event named is charged by the worker, once, and ends succeeded', async () => {
    const payment = await newPayment();
    await deliver(
      JSON.stringify(forgedEvent('payment_intent.succeeded', payment, `pi_${payment.paymentId}`)),
    );
    expect(await ledgerChargesFor(system.processorSql, payment.paymentId)).toBe(0);
    const worker = await system.startWorker('w-webhook-forgery');
    try {
      const statuses = await waitForTerminal(system.app.client.sql, [payment.paymentId], 60_000);
      expect(statuses.get(payment.paymentId)).toBe('succeeded');
      expect(await ledgerChargesFor(system.processorSql, payment.paymentId)).toBe(1);
    } finally {
      await worker.stop();
    }
  }, 120_000);
});
