import { createServer, type Server } from 'node:http';
import { findFreePort } from '@once/postgres';
import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningProcessor } from './start-processor.ts';
import { adminClient } from './testing/admin-client.ts';
import { formPost } from './testing/form-post.ts';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { startTestProcessor } from './testing/test-processor.ts';
import { signPayload } from './webhooks/webhook-deliverer.ts';

const SECRET = 'whsec_webhook_test';
const verifier = new Stripe('sk_test_unused');

interface Received {
  id: string;
  type: string;
  account: string;
  event: Stripe.Event;
}

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;
let receiver: Server;
const received: Received[] = [];
const rejected: string[] = [];
/** Event ids the receiver should answer 500 to, and how many times. */
const failuresToGive = new Map<string, number>();
let failEverythingFor: { paymentIntent?: string; times: number } = { times: 0 };

beforeAll(async () => {
  const port = await findFreePort();
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      let event: Stripe.Event;
      try {
        event = verifier.webhooks.constructEvent(
          body,
          req.headers['stripe-signature'] as string,
          SECRET,
        );
      } catch (error) {
        rejected.push(String(error));
        res.writeHead(400).end();
        return;
      }
      const object = event.data.object as { id: string; payment_intent?: string };
      const pi = object.payment_intent ?? object.id;
      if (failEverythingFor.paymentIntent === pi && failEverythingFor.times > 0) {
        failEverythingFor.times--;
        failuresToGive.set(event.id, (failuresToGive.get(event.id) ?? 0) + 1);
        res.writeHead(500).end('not now');
        return;
      }
      received.push({
        id: event.id,
        type: event.type,
        account: (event as { account?: string }).account!,
        event,
      });
      res.writeHead(200).end('{"received":true}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  database = await createProcessorTestDatabase('webhooks');
  processor = await startTestProcessor({
    databaseUrl: database.url,
    webhookUrl: `http://127.0.0.1:${port}/hook`,
    webhookSecret: SECRET,
    webhookBackoffMs: 50,
  });
});

afterAll(async () => {
  await processor?.stop();
  await new Promise((resolve) => receiver?.close(resolve));
  await database?.drop();
});

beforeEach(async () => {
  await adminClient(processor.url).clearFaults();
});

async function eventually<T>(check: () => T | undefined | Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('condition never became true');
}

const eventsFor = (paymentIntent: string) =>
  received.filter((r) => {
    const object = r.event.data.object as { id: string; payment_intent?: string };
    return (object.payment_intent ?? object.id) === paymentIntent;
  });

describe('signed webhooks from the outbox', () => {
  it('payment_intent.succeeded arrives signed (the SDK verifies it), for the right account', async () => {
    const intent = await formPost(
      processor.url,
      '/v1/payment_intents',
      'amount=1500&currency=usd&payment_method=pm_card_visa&confirm=true&metadata[order]=wh1',
      { secretKey: 'sk_test_tenant_b' },
    );
    const [event] = await eventually(() => {
      const got = eventsFor(intent.json.id);
      return got.length ? got : undefined;
    });
    expect(event).toMatchObject({ type: 'payment_intent.succeeded', account: 'acct_tenant_b' });
    expect(event!.id).toMatch(/^evt_/);
    expect(event!.event.data.object).toMatchObject({
      id: intent.json.id,
      status: 'succeeded',
      metadata: { order: 'wh1' },
    });
    expect(rejected).toEqual([]);
  });

  it('signs with the documented scheme: the SDK accepts the right secret and rejects another', async () => {
    const payload = JSON.stringify({
      id: 'evt_x',
      object: 'event',
      type: 'payment_intent.succeeded',
    });
    const header = signPayload(payload, SECRET);
    expect(verifier.webhooks.constructEvent(payload, header, SECRET).id).toBe('evt_x');
    expect(() => verifier.webhooks.constructEvent(payload, header, 'whsec_other')).toThrow(
      Stripe.errors.StripeSignatureVerificationError,
    );
    expect(() => verifier.webhooks.constructEvent(`${payload} `, header, SECRET)).toThrow();
  });

  it('payment_failed and charge.refunded are sent too', async () => {
    const declined = await formPost(
      processor.url,
      '/v1/payment_intents',
      'amount=900&currency=usd&payment_method=pm_card_chargeDeclined&confirm=true',
    );
    expect(declined.status).toBe(402);
    const piId = declined.json.error.payment_intent.id as string;
    await eventually(() =>
      eventsFor(piId).some((e) => e.type === 'payment_intent.payment_failed') ? true : undefined,
    );

    const paid = await formPost(
      processor.url,
      '/v1/payment_intents',
      'amount=900&currency=usd&payment_method=pm_card_visa&confirm=true',
    );
    await formPost(processor.url, '/v1/refunds', `payment_intent=${paid.json.id}`);
    const refunded = await eventually(() =>
      eventsFor(paid.json.id).find((e) => e.type === 'charge.refunded'),
    );
    expect(refunded.event.data.object).toMatchObject({
      object: 'charge',
      refunded: true,
      amount_refunded: 900,
    });
  });

  it('retries with backoff until the receiver answers 2xx, under one stable event id', async () => {
    const intent = await formPost(processor.url, '/v1/payment_intents', 'amount=100&currency=usd');
    failEverythingFor = { paymentIntent: intent.json.id, times: 3 };
    await formPost(
      processor.url,
      `/v1/payment_intents/${intent.json.id}/confirm`,
      'payment_method=pm_card_visa',
    );
    const [delivered] = await eventually(() => {
      const got = eventsFor(intent.json.id);
      return got.length ? got : undefined;
    });
    expect(failuresToGive.get(delivered!.id)).toBe(3);
    // The deliverer records the delivery after the receiver answered: wait for that write.
    const row = await eventually(async () => {
      const outbox = await adminClient(processor.url).webhookEvents('acct_tenant_a');
      return outbox.data.find((e) => e.id === delivered!.id && e.delivered_at !== null);
    });
    expect(row).toMatchObject({ attempts: 4, deliveries: 1 });
    expect(row.delivered_at).not.toBeNull();
  });

  it('duplicate_webhook delivers the same event id twice; slow_webhook still delivers', async () => {
    const admin = adminClient(processor.url);
    await admin.armFault({
      account: 'acct_tenant_a',
      kind: 'duplicate_webhook',
      path_prefix: 'payment_intent.',
    });
    await admin.armFault({ account: 'acct_tenant_a', kind: 'slow_webhook', delay_ms: 300 });
    const intent = await formPost(
      processor.url,
      '/v1/payment_intents',
      'amount=100&currency=usd&payment_method=pm_card_visa&confirm=true',
    );
    const copies = await eventually(() => {
      const got = eventsFor(intent.json.id);
      return got.length === 2 ? got : undefined;
    });
    expect(copies[0]!.id).toBe(copies[1]!.id);
    expect(copies[0]!.event).toEqual(copies[1]!.event);
    expect((await admin.listFaults('acct_tenant_a')).data).toEqual([]);
  });
});
