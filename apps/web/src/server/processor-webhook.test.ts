import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import Stripe from 'stripe';
import {
  afterAll,
  afterEach,
  beforeAll,
  describe,
  expect,
  it,
  type MockInstance,
  vi,
} from 'vitest';
import { createProcessorWebhookHandler } from './processor-webhook.ts';
import { startWebRuntime, type WebRuntime } from './runtime.ts';
import { type ServedHandler, serveFetch } from './testing/serve-fetch.ts';
import { webApiRoutes } from './testing/web-routes.ts';
import { readWebhookToleranceSeconds, signatureSkewSeconds } from './webhook-clock-skew.ts';

const WEBHOOK_SECRET = 'whsec_test_skew';

/**
 * The processor as the receiver asks it (`paymentIntents.retrieve`): every intent these tests
 * record on a payment has succeeded for that payment's amount. What a forged or misrouted
 * event changes, against the real processor, is test/webhook-secret-forgery.test.ts; here the
 * subject is the signature's clock and concurrent copies.
 */
const charged = new Map<string, number>();
/** The refunds the processor lists per intent (`refunds.list({ payment_intent })`). */
const processorRefunds = new Map<
  string,
  { id: string; status: string; failure_reason: string | null; metadata: Record<string, string> }[]
>();
const processorFor = () =>
  ({
    refunds: {
      list: async ({ payment_intent }: { payment_intent: string }) => ({
        data: processorRefunds.get(payment_intent) ?? [],
      }),
    },
    paymentIntents: {
      retrieve: async (id: string) => ({
        id,
        object: 'payment_intent',
        status: 'succeeded',
        amount: charged.get(id),
        currency: 'usd',
        last_payment_error: null,
      }),
    },
  }) as unknown as Stripe;

describe('processor webhook receiver: clock skew and concurrent duplicates', () => {
  let database: TestDatabase;
  let runtime: WebRuntime;
  let server: ServedHandler;
  /** What the next request's handler sees as its runtime (lets a test change the tolerance). */
  let current: () => WebRuntime;
  let log: MockInstance<typeof console.log>;

  beforeAll(async () => {
    database = await createTestDatabase('web_webhook_skew');
    runtime = await startWebRuntime({
      DATABASE_URL: database.url,
      SESSION_SECRET: 'webhook-test-session-secret-0123',
      PROCESSOR_WEBHOOK_SECRET: WEBHOOK_SECRET,
    });
    current = () => runtime;
    const routes = webApiRoutes(async () => current());
    const webhook = createProcessorWebhookHandler(async () => current(), { processorFor });
    server = await serveFetch((request) =>
      new URL(request.url).pathname === '/api/webhooks/processor'
        ? webhook(request)
        : routes(request),
    );
  });
  afterAll(async () => {
    await server?.close();
    await runtime?.client.close();
    await database?.drop();
  });
  beforeAll(() => {
    log = vi.spyOn(console, 'log');
  });
  afterEach(() => {
    log.mockClear();
    current = () => runtime;
  });

  const logged = () => log.mock.calls.map((call) => String(call[0]));

  async function newPayment() {
    const response = await fetch(`${server.url}/api/v1/payments`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer once_test_tenant_a',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify({ lines: [{ productId: 'bookmark', quantity: 1 }] }),
    });
    expect(response.status).toBe(201);
    const payment = (await response.json()) as { paymentId: string; amount: number };
    // The intent a worker would have recorded (step A) and the processor charged.
    const intentId = `pi_${payment.paymentId}`;
    await database.client.sql`
      update payments set processor_payment_intent_id = ${intentId} where id = ${payment.paymentId}`;
    charged.set(intentId, payment.amount);
    return payment;
  }

  function succeededEvent(payment: { paymentId: string; amount: number }) {
    return JSON.stringify({
      id: `evt_${randomUUID().replaceAll('-', '')}`,
      object: 'event',
      type: 'payment_intent.succeeded',
      account: 'acct_tenant_a',
      created: Math.floor(Date.now() / 1000),
      data: {
        object: {
          id: `pi_${payment.paymentId}`,
          object: 'payment_intent',
          amount: payment.amount,
          currency: 'usd',
          metadata: { payment_id: payment.paymentId, tenant_id: 'tenant_a' },
        },
      },
    });
  }

  /** POST a delivery signed as a processor whose clock is `skewSeconds` behind ours would. */
  const deliver = (payload: string, skewSeconds = 0) =>
    fetch(`${server.url}/api/webhooks/processor`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': Stripe.webhooks.generateTestHeaderString({
          payload,
          secret: WEBHOOK_SECRET,
          timestamp: Math.floor(Date.now() / 1000) - skewSeconds,
        }),
      },
      body: payload,
    });

  const statusOf = async (paymentId: string) =>
    (await database.client.sql`select status from payments where id = ${paymentId}`)[0]?.status;

  it('refuses a delivery signed 600 s behind our clock (tolerance 300 s), logging the skew, and changes nothing', async () => {
    const payment = await newPayment();
    const response = await deliver(succeededEvent(payment), 600);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'webhook_timestamp_outside_tolerance' });
    const refusal = logged().find((line) => line.startsWith('web: webhook refused'));
    expect(refusal).toMatch(
      /timestamp outside the tolerance; signed 60\d s before this host's clock/,
    );
    expect(refusal).toContain('tolerance 300 s, ONCE_WEBHOOK_TOLERANCE_SECONDS');
    expect(await statusOf(payment.paymentId)).toBe('processing');
  });

  it('logs the skew of a bad signature too, with its own code', async () => {
    const payment = await newPayment();
    const payload = succeededEvent(payment);
    const response = await fetch(`${server.url}/api/webhooks/processor`, {
      method: 'POST',
      headers: {
        'stripe-signature': Stripe.webhooks.generateTestHeaderString({
          payload,
          secret: 'whsec_someone_else',
        }),
      },
      body: payload,
    });
    expect(await response.json()).toMatchObject({ code: 'invalid_signature' });
    expect(logged()).toContainEqual(
      expect.stringMatching(/^web: webhook refused: signature does not verify; signed \d s before/),
    );
  });

  it('accepts a delivery skewed within the tolerance and logs a skew over a minute', async () => {
    const payment = await newPayment();
    const response = await deliver(succeededEvent(payment), 120);
    expect(response.status).toBe(200);
    expect(await statusOf(payment.paymentId)).toBe('succeeded');
    expect(logged()).toContainEqual(
      expect.stringMatching(/accepted with clock skew: signed 12\d s before this host's clock/),
    );
    // A small skew is normal and stays quiet.
    log.mockClear();
    expect((await deliver(succeededEvent(await newPayment()), 2)).status).toBe(200);
    expect(logged().filter((line) => line.includes('clock skew'))).toEqual([]);
  });

  it('takes ONCE_WEBHOOK_TOLERANCE_SECONDS from the runtime: 900 s accepts the 600 s skew', async () => {
    current = () => ({ ...runtime, webhookToleranceSeconds: 900 });
    const payment = await newPayment();
    expect((await deliver(succeededEvent(payment), 600)).status).toBe(200);
    expect(await statusOf(payment.paymentId)).toBe('succeeded');
  });

  it('measures the clock of the runtime: a web host 10 minutes fast refuses a fresh delivery', async () => {
    const fast = { now: () => new Date(Date.now() + 600_000) };
    current = () => ({ ...runtime, deps: { ...runtime.deps, clock: fast } });
    const response = await deliver(succeededEvent(await newPayment()));
    expect(response.status).toBe(400);
    expect(logged()).toContainEqual(
      expect.stringMatching(/signed 60\d s before this host's clock/),
    );
  });

  it('applies an event once when 20 copies of it arrive at the same time', async () => {
    const payment = await newPayment();
    const payload = succeededEvent(payment);
    const eventId = JSON.parse(payload).id as string;
    const responses = await Promise.all(Array.from({ length: 20 }, () => deliver(payload)));
    const fresh = responses.filter(
      (r) => r.status === 200 && r.headers.get('idempotent-replayed') !== 'true',
    );
    expect(fresh).toHaveLength(1);
    expect(await fresh[0]!.json()).toMatchObject({ outcome: { kind: 'applied' } });
    // The others replay that stored answer or are told to come back (409 + Retry-After); the
    // processor retries those and gets the replay.
    for (const response of responses) {
      if (response === fresh[0]) continue;
      if (response.status === 200) {
        expect(response.headers.get('idempotent-replayed')).toBe('true');
      } else {
        expect(response.status).toBe(409);
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    }
    console.info(
      `webhook 20x same event: ${responses.filter((r) => r.status === 200).length - 1} replayed, ${responses.filter((r) => r.status === 409).length} told 409`,
    );
    expect(await statusOf(payment.paymentId)).toBe('succeeded');
    const [keys] = await database.client.sql<{ n: number; state: string }[]>`
      select count(*)::int as n, min(state) as state from idempotency_keys
      where operation = 'webhooks.processor' and key = ${eventId}`;
    expect(keys).toEqual({ n: 1, state: 'completed' });
    const retry = await deliver(payload);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
  });

  /** A refund of `payment` as the app wrote it (with its job), in `status`. */
  async function appRefund(payment: { paymentId: string }, status: string) {
    const id = `ref_${randomUUID().replaceAll('-', '')}`;
    await database.client.sql`
      insert into refunds (tenant_id, id, payment_id, amount, status, downstream_key, requested_by)
      values ('tenant_a', ${id}, ${payment.paymentId}, 100, ${status}, ${`once_refund_${id}`}, 'op_test')`;
    return id;
  }

  /** The processor's refund `re_<refundId>` of that app refund, in `status`. */
  function processorShows(payment: { paymentId: string }, refundId: string, status: string) {
    const intent = `pi_${payment.paymentId}`;
    const others = (processorRefunds.get(intent) ?? []).filter((r) => r.id !== `re_${refundId}`);
    processorRefunds.set(intent, [
      ...others,
      {
        id: `re_${refundId}`,
        status,
        failure_reason: status === 'failed' ? 'expired_or_canceled_card' : null,
        metadata: { refund_id: refundId, payment_id: payment.paymentId, tenant_id: 'tenant_a' },
      },
    ]);
  }

  /** A signed refund event; its object claims `claimed` (the receiver does not believe it). */
  function refundEvent(
    type: string,
    payment: { paymentId: string },
    refundId: string,
    claimed = 'succeeded',
  ) {
    const charge = type === 'charge.refunded';
    return JSON.stringify({
      id: `evt_${randomUUID().replaceAll('-', '')}`,
      object: 'event',
      type,
      account: 'acct_tenant_a',
      created: Math.floor(Date.now() / 1000),
      data: {
        object: {
          id: charge ? `ch_${payment.paymentId}` : `re_${refundId}`,
          object: charge ? 'charge' : 'refund',
          status: claimed,
          payment_intent: `pi_${payment.paymentId}`,
          metadata: { payment_id: payment.paymentId, tenant_id: 'tenant_a' },
        },
      },
    });
  }

  const refundRow = async (id: string) =>
    (
      await database.client.sql<
        { status: string; processor_refund_id: string | null; failure_code: string | null }[]
      >`
        select status, processor_refund_id, failure_code from refunds where id = ${id}`
    )[0];

  it('refund.created: the refund moves to the status the processor lists, once per event id', async () => {
    const payment = await newPayment();
    const refundId = await appRefund(payment, 'requested');
    processorShows(payment, refundId, 'pending');
    // The body claims succeeded; the processor says pending: pending is recorded.
    const payload = refundEvent('refund.created', payment, refundId, 'succeeded');
    const response = await deliver(payload);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      moved: [{ refundId, from: 'requested', to: 'pending' }],
    });
    expect(await refundRow(refundId)).toEqual({
      status: 'pending',
      processor_refund_id: `re_${refundId}`,
      failure_code: null,
    });
    processorShows(payment, refundId, 'succeeded');
    const again = await deliver(payload);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await refundRow(refundId))?.status).toBe('pending');
    expect((await deliver(refundEvent('refund.updated', payment, refundId))).status).toBe(200);
    expect((await refundRow(refundId))?.status).toBe('succeeded');
  });

  it('refund.failed after succeeded: failed (the money came back); nothing moves a failed refund again', async () => {
    const payment = await newPayment();
    const refundId = await appRefund(payment, 'succeeded');
    processorShows(payment, refundId, 'failed');
    expect((await deliver(refundEvent('refund.failed', payment, refundId, 'failed'))).status).toBe(
      200,
    );
    expect(await refundRow(refundId)).toMatchObject({
      status: 'failed',
      failure_code: 'expired_or_canceled_card',
    });
    processorShows(payment, refundId, 'succeeded');
    const late = await deliver(refundEvent('refund.updated', payment, refundId));
    expect(await late.json()).toMatchObject({ moved: [] });
    expect((await refundRow(refundId))?.status).toBe('failed');
  });

  it('charge.refunded moves every refund of the payment the processor lists', async () => {
    const payment = await newPayment();
    const first = await appRefund(payment, 'requested');
    const second = await appRefund(payment, 'unknown');
    processorShows(payment, first, 'succeeded');
    processorShows(payment, second, 'succeeded');
    expect((await deliver(refundEvent('charge.refunded', payment, first))).status).toBe(200);
    expect((await refundRow(first))?.status).toBe('succeeded');
    expect((await refundRow(second))?.status).toBe('succeeded');
  });

  it('ignores a refund event for an intent the payment did not record', async () => {
    const payment = await newPayment();
    const refundId = await appRefund(payment, 'requested');
    processorShows(payment, refundId, 'succeeded');
    const forged = JSON.parse(refundEvent('refund.updated', payment, refundId));
    forged.data.object.payment_intent = 'pi_someone_else';
    const response = await deliver(JSON.stringify(forged));
    expect(await response.json()).toMatchObject({ ignored: 'not_the_recorded_intent' });
    expect((await refundRow(refundId))?.status).toBe('requested');
  });
});

describe('readWebhookToleranceSeconds', () => {
  it('defaults to 300 (Stripe), accepts 1..86400, refuses anything else with what to set', () => {
    expect(readWebhookToleranceSeconds({})).toBe(300);
    expect(readWebhookToleranceSeconds({ ONCE_WEBHOOK_TOLERANCE_SECONDS: ' 600 ' })).toBe(600);
    for (const bad of ['0', '-5', '5m', '1.5', '86401']) {
      expect(() => readWebhookToleranceSeconds({ ONCE_WEBHOOK_TOLERANCE_SECONDS: bad })).toThrow(
        /ONCE_WEBHOOK_TOLERANCE_SECONDS must be a whole number of seconds from 1 to 86400/,
      );
    }
  });

  it('reads the skew from the signature header', () => {
    expect(signatureSkewSeconds('t=1700000000,v1=ab', 1_700_000_042_999)).toBe(42);
    expect(signatureSkewSeconds('v1=ab,t=1700000100', 1_700_000_000_000)).toBe(-100);
    expect(signatureSkewSeconds('v1=ab', 0)).toBeUndefined();
  });
});
