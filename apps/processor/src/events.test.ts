import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcessor } from './start-processor.ts';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { stripeClient } from './testing/stripe-client.ts';
import { startTestProcessor } from './testing/test-processor.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;
/** Accepts `payment_intent.*` deliveries and refuses every other (so those stay undelivered). */
let receiver: Server;
let stripe: Stripe;

const refundKey = randomUUID();
let refund: Stripe.Response<Stripe.Refund>;
let intentId: string;

const waitFor = async (check: () => Promise<boolean>, what: string) => {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
};

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const type = (JSON.parse(body) as { type: string }).type;
      res.statusCode = type.startsWith('payment_intent.') ? 200 : 500;
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  database = await createProcessorTestDatabase('events_list');
  processor = await startTestProcessor({
    databaseUrl: database.url,
    webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`,
    refundSettleMs: 200,
  });
  stripe = stripeClient(processor.url, 'sk_test_tenant_a');
  const intent = await stripe.paymentIntents.create(
    { amount: 3000, currency: 'usd', payment_method: 'pm_card_pendingRefund', confirm: true },
    { idempotencyKey: randomUUID() },
  );
  intentId = intent.id;
  refund = await stripe.refunds.create(
    { payment_intent: intent.id, amount: 1000 },
    { idempotencyKey: refundKey },
  );
  // The pending refund settles by itself (`refund.updated`), and the intent's event is delivered.
  await waitFor(
    async () =>
      (await stripe.events.list({ type: 'refund.updated' })).data.length === 1 &&
      (await stripe.events.list({ delivery_success: true })).data.length === 1,
    'the refund to settle and payment_intent.succeeded to be delivered',
  );
}, 60_000);

afterAll(async () => {
  await processor?.stop();
  await database?.drop();
  receiver?.close();
});

const typesOf = (list: Stripe.ApiList<Stripe.Event>) => list.data.map((e) => e.type).sort();

describe('GET /v1/events through the official SDK (stripe.events.list)', () => {
  it('names the API request that caused each event: its Request-Id and Idempotency-Key', async () => {
    const { data } = await stripe.events.list({ type: 'refund.created' });
    expect(data).toHaveLength(1);
    expect(data[0]!.data.object).toMatchObject({ id: refund.id, status: 'pending' });
    expect(refund.lastResponse.requestId).toMatch(/^req_/);
    expect(data[0]!.request).toEqual({
      id: refund.lastResponse.requestId,
      idempotency_key: refundKey,
    });
  });

  it('an event the processor caused itself (a refund settling) has no request', async () => {
    const { data } = await stripe.events.list({ type: 'refund.updated' });
    expect(data[0]!.data.object).toMatchObject({ id: refund.id, status: 'succeeded' });
    expect(data[0]!.request).toEqual({ id: null, idempotency_key: null });
  });

  it('filters by type, a * group, or types[] (not type and types together)', async () => {
    expect(typesOf(await stripe.events.list({ type: 'refund.*' }))).toEqual([
      'refund.created',
      'refund.updated',
    ]);
    expect(
      typesOf(await stripe.events.list({ types: ['charge.refunded', 'payment_intent.succeeded'] })),
    ).toEqual(['charge.refunded', 'payment_intent.succeeded']);
    await expect(
      stripe.events.list({ type: 'refund.created', types: ['charge.refunded'] }),
    ).rejects.toMatchObject({ statusCode: 400, param: 'types' });
  });

  it('delivery_success=false lists the events not delivered yet; true, the delivered', async () => {
    expect(typesOf(await stripe.events.list({ delivery_success: false }))).toEqual([
      'charge.refunded',
      'refund.created',
      'refund.updated',
    ]);
    const delivered = await stripe.events.list({ delivery_success: true });
    expect(typesOf(delivered)).toEqual(['payment_intent.succeeded']);
    expect(delivered.data[0]!.data.object).toMatchObject({ id: intentId });
  });

  it('filters by created (a range in Unix seconds)', async () => {
    const now = Math.floor(Date.now() / 1000);
    expect((await stripe.events.list({ created: { gt: now + 60 } })).data).toEqual([]);
    expect(
      (await stripe.events.list({ created: { lte: now + 60, gte: now - 600 } })).data,
    ).toHaveLength(4);
    expect((await stripe.events.list({ created: { lt: now - 600 } })).data).toEqual([]);
  });

  it('pages newest first with limit and starting_after, each event once', async () => {
    const all = await stripe.events.list({ limit: 100 });
    expect(all.data).toHaveLength(4);
    const created = all.data.map((e) => e.created);
    expect(created).toEqual([...created].sort((a, b) => b - a));
    const paged = await stripe.events.list({ limit: 1 }).autoPagingToArray({ limit: 10 });
    expect(paged.map((e) => e.id)).toEqual(all.data.map((e) => e.id));
    expect((await stripe.events.retrieve(all.data[0]!.id)).id).toBe(all.data[0]!.id);
  });
});
