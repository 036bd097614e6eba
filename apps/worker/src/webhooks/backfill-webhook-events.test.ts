import { createIdempotency } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessSystem, startInProcessSystem } from '../test-support/in-process-system.ts';
import { type SeededCheckout, seedCheckout, seedRefund } from '../test-support/seed-checkouts.ts';
import { backfillWebhookEvents } from './backfill-webhook-events.ts';

// The webhook backfill below the page: the worker's handlers in this process, the real
// processor (in process) and a real database. The processor's webhook endpoint is a closed
// port, so every event it sends fails delivery: the app learns of it only from the backfill.
let system: InProcessSystem;

beforeAll(async () => {
  // Asynchronous test-card refunds settle after 300 ms instead of Stripe's "some time later".
  system = await startInProcessSystem('worker_webhook_backfill', { refundSettleMs: 300 });
  system.deps.returnUrl = 'https://shop.example/checkout/return';
}, 60_000);

afterAll(async () => {
  await system?.close();
});

const sql = () => system.app.client.sql;

const backfill = () =>
  backfillWebhookEvents({
    store: {
      db: system.app.client.db,
      idempotencyEngine: createIdempotency({ store: createDrizzleStore(system.app.client.db) }),
    },
    processorFor: system.deps.processorFor,
    log: () => {},
  });

/** The processor's events about one intent (its own, or its refunds'), undelivered. */
async function undeliveredEventsOf(intentId: string, type: string) {
  const { data } = await system.deps
    .processorFor('sk_test_tenant_a')
    .events.list({ delivery_success: false, type, limit: 100 });
  return data.filter((event) => {
    const object = event.data.object as { id: string; payment_intent?: string };
    return object.id === intentId || object.payment_intent === intentId;
  });
}

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 100 && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await read();
  }
  return value;
}

const paymentRow = async (paymentId: string) =>
  (
    await sql()<{ status: string; next_action_url: string | null; intent: string | null }[]>`
      select status, next_action_url, processor_payment_intent_id as intent
      from payments where id = ${paymentId}`
  )[0]!;

/** The payment's timeline, and the event-id records of the webhook receiver's operation. */
async function recordsOf(paymentId: string, eventId: string) {
  const timeline = await sql()<{ kind: string; detail: Record<string, unknown> }[]>`
    select kind, detail from payment_events where payment_id = ${paymentId} order by seq`;
  const keys = await sql()<{ state: string }[]>`
    select state from idempotency_keys where operation = 'webhooks.processor' and key = ${eventId}`;
  return { timeline, keys };
}

/** The shopper answers the bank's page; the processor charges and sends a webhook nobody gets. */
async function completeChallenge(checkout: SeededCheckout): Promise<string> {
  await system.runJobsOf(checkout.paymentId);
  const row = await paymentRow(checkout.paymentId);
  expect(row.status).toBe('requires_action');
  const url = new URL(row.next_action_url!);
  const answered = await fetch(new URL(url.pathname, url), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      client_secret: url.searchParams.get('client_secret')!,
      answer: 'complete',
    }),
    redirect: 'manual',
  });
  expect(answered.status).toBe(303);
  return row.intent!;
}

describe('webhook backfill: the processor lists the events the app missed, the worker applies them once', () => {
  it('a payment_intent.succeeded never delivered (endpoint down) settles the payment; a second pass changes nothing', async () => {
    const checkout = await seedCheckout(sql(), {
      amount: 2500,
      paymentMethod: 'pm_card_threeDSecure2Required',
    });
    const intentId = await completeChallenge(checkout);
    const [event] = await eventually(
      () => undeliveredEventsOf(intentId, 'payment_intent.succeeded'),
      (events) => events.length === 1,
    );
    // Nobody told the app: the payment still waits for the shopper's answer.
    expect((await paymentRow(checkout.paymentId)).status).toBe('requires_action');

    const first = await backfill();
    expect(first.applied).toBeGreaterThanOrEqual(1);
    expect((await paymentRow(checkout.paymentId)).status).toBe('succeeded');
    const applied = await recordsOf(checkout.paymentId, event!.id);
    expect(applied.keys).toEqual([{ state: 'completed' }]);
    expect(applied.timeline.filter((e) => e.kind.startsWith('webhook.'))).toEqual([
      {
        kind: 'webhook.applied',
        detail: expect.objectContaining({ eventId: event!.id, via: 'backfill' }),
      },
    ]);

    // Still undelivered as far as the processor knows (as Stripe): listed again, applied never again.
    expect(await undeliveredEventsOf(intentId, 'payment_intent.succeeded')).toHaveLength(1);
    const second = await backfill();
    expect(second).toMatchObject({ applied: 0, left: 0 });
    expect(second.alreadyApplied).toBeGreaterThanOrEqual(1);
    expect(await recordsOf(checkout.paymentId, event!.id)).toEqual(applied);
    expect(await system.ledgerOf(checkout.paymentId)).toEqual([
      expect.objectContaining({ kind: 'charge', amount: 2500 }),
    ]);
    await system.expectInvariantHolds();
  });

  it('a refund.failed never delivered (the money came back) moves the succeeded refund to failed, once', async () => {
    const checkout = await seedCheckout(sql(), {
      amount: 3000,
      paymentMethod: 'pm_card_refundFail',
    });
    await system.runJobsOf(checkout.paymentId);
    const refund = await seedRefund(sql(), checkout, 1000);
    await system.runJobsOf(checkout.paymentId);
    const refundStatus = async () =>
      (
        await sql()<{ status: string }[]>`select status from refunds where id = ${refund.refundId}`
      )[0]!.status;
    // The refund job ended on the processor's `succeeded`; the failure comes later, by webhook only.
    expect(await refundStatus()).toBe('succeeded');
    const intentId = (await paymentRow(checkout.paymentId)).intent!;
    const [failed] = await eventually(
      () => undeliveredEventsOf(intentId, 'refund.failed'),
      (events) => events.length === 1,
    );
    expect(await refundStatus()).toBe('succeeded');

    await backfill();
    expect(await refundStatus()).toBe('failed');
    const [key] = await sql()<{ state: string; response_body: string }[]>`
      select state, response_body from idempotency_keys
      where operation = 'webhooks.processor' and key = ${failed!.id}`;
    expect(key!.state).toBe('completed');
    expect(JSON.parse(key!.response_body)).toMatchObject({
      eventId: failed!.id,
      moved: [{ refundId: refund.refundId, from: 'succeeded', to: 'failed' }],
    });

    const second = await backfill();
    expect(second).toMatchObject({ applied: 0, left: 0 });
    expect(await refundStatus()).toBe('failed');
    await system.expectInvariantHolds();
  });
});
