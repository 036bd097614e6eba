import { createServer, type Server } from 'node:http';
import { findFreePort } from '@once/postgres';
import postgres from 'postgres';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcessor } from './start-processor.ts';
import { formPost } from './testing/form-post.ts';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { startTestProcessor } from './testing/test-processor.ts';

// The operator's "Resend" of one webhook event (the Stripe Dashboard's button): the same event
// again, recorded as an attempt. Automatic retries wait a minute here, so every send after the
// first is the resend's own.
const SECRET = 'whsec_resend_test';
const verifier = new Stripe('sk_test_unused');

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;
let receiver: Server;
let sql: postgres.Sql;
/** Verified bodies the receiver answered 2xx, in order. */
const received: { id: string; body: string }[] = [];
/** Bodies it answered 500 to. */
const refused: string[] = [];
let receiverAnswers = 200;

beforeAll(async () => {
  const port = await findFreePort();
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const event = verifier.webhooks.constructEvent(
        body,
        req.headers['stripe-signature'] as string,
        SECRET,
      );
      if (receiverAnswers !== 200) {
        refused.push(event.id);
        res.writeHead(receiverAnswers).end('not now');
        return;
      }
      received.push({ id: event.id, body });
      res.writeHead(200).end('{"received":true}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  database = await createProcessorTestDatabase('webhook_resend');
  processor = await startTestProcessor({
    databaseUrl: database.url,
    webhookUrl: `http://127.0.0.1:${port}/hook`,
    webhookSecret: SECRET,
  });
  sql = postgres(database.url, { max: 1 });
});

afterAll(async () => {
  await sql?.end();
  await processor?.stop();
  await new Promise((resolve) => receiver?.close(resolve));
  await database?.drop();
});

interface AdminWebhookEvent {
  id: string;
  type: string;
  status: 'delivered' | 'pending' | 'failed';
  attempts: number;
  deliveries: number;
  delivered_at: string | null;
  next_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
}

async function admin(method: string, path: string, body?: unknown) {
  const response = await fetch(`${processor.url}${path}`, {
    method,
    headers: { 'x-admin-token': 'once-admin', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: admin JSON in tests; the assertions check it
  return { status: response.status, json: (await response.json()) as any };
}

const outboxOf = async (paymentIntent: string): Promise<AdminWebhookEvent[]> =>
  (await admin('GET', `/admin/webhook-events?payment_intent=${paymentIntent}`)).json.data;

async function eventually<T>(check: () => Promise<T | undefined>): Promise<T> {
  // Bounded by time, not by tries: a loaded CI machine delivers a webhook in seconds.
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('condition never became true');
}

/** A paid intent whose `payment_intent.succeeded` got its first answer: `answer` (200 or 500). */
async function paidIntentFirstAnswered(answer: number) {
  receiverAnswers = answer;
  const intent = await formPost(
    processor.url,
    '/v1/payment_intents',
    'amount=700&currency=usd&payment_method=pm_card_visa&confirm=true',
  );
  const event = await eventually(async () => {
    const [row] = await outboxOf(intent.json.id);
    return row && row.last_status === answer ? row : undefined;
  });
  receiverAnswers = 200;
  return { intentId: intent.json.id as string, event };
}

describe('POST /admin/webhook-events/:id/resend', () => {
  it('sends a retrying event again under the same id and bytes; a 2xx makes it delivered', async () => {
    const { intentId, event } = await paidIntentFirstAnswered(500);
    expect(event).toMatchObject({ status: 'pending', attempts: 1, last_error: 'HTTP 500' });
    expect(event.next_attempt_at).not.toBeNull();

    const resent = await admin('POST', `/admin/webhook-events/${event.id}/resend`, {
      account: 'acct_tenant_a',
    });
    expect(resent.status).toBe(200);
    expect(resent.json).toMatchObject({ delivered: true, status: 200, error: null });
    expect(received.filter((r) => r.id === event.id)).toHaveLength(1);
    const [row] = await outboxOf(intentId);
    expect(row).toMatchObject({
      id: event.id,
      status: 'delivered',
      attempts: 2,
      deliveries: 1,
      last_status: 200,
      last_error: null,
      next_attempt_at: null,
    });
    expect(resent.json.webhook_event).toEqual(row);
  });

  it('a delivered event is sent again, identical, and counted; a failed resend keeps it delivered', async () => {
    const { intentId, event } = await paidIntentFirstAnswered(200);
    await admin('POST', `/admin/webhook-events/${event.id}/resend`);
    const copies = received.filter((r) => r.id === event.id);
    expect(copies).toHaveLength(2);
    expect(copies[1]!.body).toBe(copies[0]!.body);

    receiverAnswers = 500;
    const refusedResend = await admin('POST', `/admin/webhook-events/${event.id}/resend`);
    receiverAnswers = 200;
    expect(refusedResend.json).toMatchObject({ delivered: false, status: 500, error: 'HTTP 500' });
    expect((await outboxOf(intentId))[0]).toMatchObject({
      status: 'delivered',
      attempts: 3,
      deliveries: 2,
      last_status: 500,
    });
  });

  it('a resend the endpoint refuses leaves the scheduled retry as it was', async () => {
    const { intentId, event } = await paidIntentFirstAnswered(500);
    receiverAnswers = 500;
    const resent = await admin('POST', `/admin/webhook-events/${event.id}/resend`);
    receiverAnswers = 200;
    expect(resent.json).toMatchObject({ delivered: false, status: 500 });
    expect((await outboxOf(intentId))[0]).toMatchObject({
      status: 'pending',
      attempts: 2,
      deliveries: 0,
      next_attempt_at: event.next_attempt_at,
    });
  });

  it('an unknown id, or an event of another account, is a stable 404 that sends and changes nothing', async () => {
    const { intentId, event } = await paidIntentFirstAnswered(500);
    const before = await outboxOf(intentId);
    const sent = received.length + refused.length;
    for (const [id, body] of [
      ['evt_does_not_exist', undefined],
      [event.id, { account: 'acct_tenant_b' }],
    ] as const) {
      const answer = await admin('POST', `/admin/webhook-events/${id}/resend`, body);
      expect(answer).toEqual({
        status: 404,
        json: { error: { message: `No such webhook event: ${id}.` } },
      });
    }
    expect(received.length + refused.length).toBe(sent);
    expect(await outboxOf(intentId)).toEqual(before);
  });

  it('needs the admin token', async () => {
    const response = await fetch(`${processor.url}/admin/webhook-events/evt_x/resend`, {
      method: 'POST',
    });
    expect(response.status).toBe(401);
  });
});

describe('GET /admin/webhook-events', () => {
  it('filters by payment_intent (its charge and refund events too) and keeps the newest `limit`', async () => {
    const { intentId } = await paidIntentFirstAnswered(200);
    await formPost(processor.url, '/v1/refunds', `payment_intent=${intentId}`);
    const events = await eventually(async () => {
      const rows = await outboxOf(intentId);
      return rows.some((r) => r.type === 'charge.refunded') ? rows : undefined;
    });
    expect(events[0]!.type).toBe('payment_intent.succeeded');
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['refund.created']));
    const newest = (await admin('GET', `/admin/webhook-events?payment_intent=${intentId}&limit=2`))
      .json.data as AdminWebhookEvent[];
    expect(newest.map((e) => e.id)).toEqual(events.slice(-2).map((e) => e.id));
    expect((await admin('GET', '/admin/webhook-events?limit=0')).status).toBe(400);
  });

  it('an event past its automatic attempts is failed, with no next retry', async () => {
    const { intentId, event } = await paidIntentFirstAnswered(500);
    await sql`update webhook_events set attempts = 30 where id = ${event.id}`;
    expect((await outboxOf(intentId))[0]).toMatchObject({
      status: 'failed',
      next_attempt_at: null,
    });
  });
});
