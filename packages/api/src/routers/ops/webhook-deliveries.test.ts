import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type {
  ProcessorWebhookDeliveries,
  WebhookDelivery,
} from '../../processor/processor-admin.ts';
import { ProcessorUnreachableError } from '../../processor/processor-admin.ts';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';
import { refusal } from '../../testing/refusal.ts';

// The cockpit's webhook deliveries: the processor's outbox, asked for the caller's tenant's
// account only, and its resend under the operator's Idempotency-Key. The processor's side is
// apps/processor/src/webhook-resend.test.ts; here it is a fake that records what it was asked.

const delivery = (eventId: string, account: string): WebhookDelivery => ({
  eventId,
  type: 'payment_intent.succeeded',
  status: 'pending',
  attempts: 1,
  deliveries: 0,
  deliveredAt: null,
  nextAttemptAt: '2026-01-01T00:00:00.000Z',
  lastStatus: 500,
  lastError: 'HTTP 500',
  createdAt: '2026-01-01T00:00:00.000Z',
  paymentIntentId: `pi_of_${account}`,
  paymentId: null,
});

/** The outbox: events by account; `sends` counts each resend that reached the processor. */
const outbox: Record<string, string[]> = {
  acct_tenant_a: ['evt_a1', 'evt_a2'],
  acct_tenant_b: ['evt_b1'],
};
const sends: string[] = [];
const lists: { account: string; paymentIntentId?: string; limit: number }[] = [];
let unreachable = false;
/**
 * Holds a resend at the processor until released, so a second click provably arrives while
 * the first is sending (a fixed sleep raced the first request's own start on a loaded machine).
 */
let held: { entered: () => void; release: Promise<void> } | undefined;

const fakeProcessor: ProcessorWebhookDeliveries = {
  async list(account, filter) {
    if (unreachable) throw new ProcessorUnreachableError('processor down');
    lists.push({ account, ...filter });
    return (outbox[account] ?? []).map((id) => delivery(id, account));
  },
  async resend(account, eventId) {
    if (unreachable) throw new ProcessorUnreachableError('processor down');
    if (!outbox[account]?.includes(eventId)) return undefined;
    sends.push(eventId);
    // Only the first send is held: a second one (a bug) goes through and is counted.
    const hold = held;
    held = undefined;
    if (hold) {
      hold.entered();
      await hold.release;
    }
    return {
      delivered: true,
      status: 200,
      error: null,
      delivery: { ...delivery(eventId, account), status: 'delivered', deliveries: 1 },
    };
  },
};

let h: ApiTestHarness;
beforeAll(async () => {
  h = await createApiTestHarness('api_webhook_deliveries', { processorWebhooks: fakeProcessor });
}, 60_000);
afterAll(async () => {
  await h.drop();
});
beforeEach(() => {
  sends.length = 0;
  lists.length = 0;
  unreachable = false;
  held = undefined;
});

const operatorOf = (tenant: 'tenant_a' | 'tenant_b', key?: string) =>
  h.caller({ ...bearer(tenant), ...(key ? { 'idempotency-key': key } : {}) });

async function paymentWithIntent(intentId: string | null): Promise<string> {
  const paid = await operatorOf('tenant_a', randomUUID()).api.checkout.pay({
    lines: [{ productId: 'book_sre', quantity: 1 }],
  });
  await h.database.client.sql`
    update payments set processor_payment_intent_id = ${intentId} where id = ${paid.paymentId}`;
  return paid.paymentId;
}

describe('ops.webhookDeliveries', () => {
  it('asks the processor for the caller’s own account only', async () => {
    const a = await operatorOf('tenant_a').api.ops.webhookDeliveries({ limit: 20 });
    const b = await operatorOf('tenant_b').api.ops.webhookDeliveries();
    expect(a.deliveries.map((d) => d.eventId)).toEqual(['evt_a1', 'evt_a2']);
    expect(b.deliveries.map((d) => d.eventId)).toEqual(['evt_b1']);
    expect(lists).toEqual([
      { account: 'acct_tenant_a', limit: 20 },
      { account: 'acct_tenant_b', limit: 50 },
    ]);
  });

  it('of one payment: its PaymentIntent’s events; another tenant’s payment is not found', async () => {
    const paymentId = await paymentWithIntent('pi_123');
    const answer = await operatorOf('tenant_a').api.ops.webhookDeliveries({ paymentId });
    expect(answer.processor).toBe('reachable');
    expect(lists).toEqual([{ account: 'acct_tenant_a', paymentIntentId: 'pi_123', limit: 50 }]);
    expect(await refusal(operatorOf('tenant_b').api.ops.webhookDeliveries({ paymentId }))).toEqual({
      trpc: 'NOT_FOUND',
      code: 'payment_not_found',
    });
    expect(lists).toHaveLength(1);
  });

  it('a payment with no intent yet has no events, and the processor is not asked', async () => {
    const paymentId = await paymentWithIntent(null);
    expect(await operatorOf('tenant_a').api.ops.webhookDeliveries({ paymentId })).toEqual({
      processor: 'no_intent',
      processorError: null,
      deliveries: [],
    });
    expect(lists).toEqual([]);
  });

  it('a processor that cannot be asked is an answer, not an error', async () => {
    unreachable = true;
    expect(await operatorOf('tenant_a').api.ops.webhookDeliveries()).toEqual({
      processor: 'unreachable',
      processorError: 'processor down',
      deliveries: [],
    });
  });
});

describe('ops.resendWebhook', () => {
  it('a double click under one key resends once; the second answer is the first replayed', async () => {
    const key = randomUUID();
    const first = operatorOf('tenant_a', key);
    const again = operatorOf('tenant_a', key);
    const answer = await first.api.ops.resendWebhook({ eventId: 'evt_a1' });
    expect(answer).toMatchObject({ eventId: 'evt_a1', delivered: true, status: 200 });
    expect(await again.api.ops.resendWebhook({ eventId: 'evt_a1' })).toEqual(answer);
    expect(again.resHeaders.get('idempotent-replayed')).toBe('true');
    expect(sends).toEqual(['evt_a1']);
  });

  it('a click while the first is still sending is refused as in use and sends nothing', async () => {
    const key = randomUUID();
    let release = () => {};
    const entered = new Promise<void>((resolveEntered) => {
      held = { entered: resolveEntered, release: new Promise((r) => (release = r)) };
    });
    const first = operatorOf('tenant_a', key).api.ops.resendWebhook({ eventId: 'evt_a2' });
    await entered;
    const second = await refusal(
      operatorOf('tenant_a', key).api.ops.resendWebhook({ eventId: 'evt_a2' }),
    );
    release();
    await first;
    expect(second.trpc).toBe('CONFLICT');
    expect(sends).toEqual(['evt_a2']);
  });

  it('another tenant’s event is not found, like an unknown one, and sends nothing', async () => {
    for (const eventId of ['evt_a1', 'evt_unknown']) {
      expect(
        await refusal(operatorOf('tenant_b', randomUUID()).api.ops.resendWebhook({ eventId })),
      ).toEqual({ trpc: 'NOT_FOUND', code: 'webhook_event_not_found' });
    }
    expect(sends).toEqual([]);
  });

  it('needs an Idempotency-Key', async () => {
    expect(
      await refusal(operatorOf('tenant_a').api.ops.resendWebhook({ eventId: 'evt_a1' })),
    ).toMatchObject({ code: 'idempotency_key_missing' });
    expect(sends).toEqual([]);
  });

  it('a processor that cannot be asked is 503 and releases the key: the retry sends', async () => {
    const key = randomUUID();
    unreachable = true;
    expect(
      await refusal(operatorOf('tenant_a', key).api.ops.resendWebhook({ eventId: 'evt_a1' })),
    ).toEqual({ trpc: 'SERVICE_UNAVAILABLE', code: 'SERVICE_UNAVAILABLE' });
    unreachable = false;
    await operatorOf('tenant_a', key).api.ops.resendWebhook({ eventId: 'evt_a1' });
    expect(sends).toEqual(['evt_a1']);
  });
});
