import { randomUUID } from 'node:crypto';
import type Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningProcessor } from './start-processor.ts';
import { adminClient } from './testing/admin-client.ts';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { stripeClient } from './testing/stripe-client.ts';
import { startTestProcessor } from './testing/test-processor.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;
let stripe: Stripe;

beforeAll(async () => {
  database = await createProcessorTestDatabase('fault_uses');
  processor = await startTestProcessor({ databaseUrl: database.url });
  stripe = stripeClient(processor.url, 'sk_test_tenant_a');
});

afterAll(async () => {
  await processor?.stop();
  await database?.drop();
});

beforeEach(async () => {
  await adminClient(processor.url).clearFaults();
});

interface Use {
  used_at: string;
  operation: string;
  idempotency_key: string | null;
  object: string | null;
}

/** The recorded uses of one fault, as `GET /admin/faults/uses` lists them. */
async function usesOf(fault: Record<string, unknown>, query = ''): Promise<Use[]> {
  const response = await fetch(
    `${processor.url}/admin/faults/uses?id=${String(fault.id)}${query}`,
    { headers: { 'x-admin-token': 'once-admin' } },
  );
  expect(response.status).toBe(200);
  const body = (await response.json()) as { data: { id: string; taken: number; uses: Use[] }[] };
  expect(body.data.map((f) => f.id)).toEqual([fault.id]);
  const [entry] = body.data;
  // A use is on record if and only if it was counted.
  expect(entry!.uses).toHaveLength(Math.min(entry!.taken, 20));
  return entry!.uses;
}

const armOnConfirm = (kind: string, extra: Record<string, unknown> = {}) =>
  adminClient(processor.url).armFault({
    account: 'acct_tenant_a',
    kind,
    operation: 'payment_intents.confirm',
    ...extra,
  });

const newIntent = () =>
  stripe.paymentIntents.create({ amount: 1200, currency: 'usd', payment_method: 'pm_card_visa' });

describe('a fault records each use: when, which call, which key, which object', () => {
  it('a confirm it bit lists the request key, the operation and the payment intent', async () => {
    const fault = await armOnConfirm('fail_after_charge');
    const intent = await newIntent();
    const key = `confirm-${randomUUID()}`;
    const before = Date.now();
    // The SDK retries the injected 500 under the same key and gets the stored success.
    const confirmed = await stripe.paymentIntents.confirm(intent.id, {}, { idempotencyKey: key });
    expect(confirmed.status).toBe('succeeded');
    const uses = await usesOf(fault);
    expect(uses).toEqual([
      {
        used_at: expect.any(String),
        operation: 'payment_intents.confirm',
        idempotency_key: key,
        object: intent.id,
      },
    ]);
    // The database's clock, at the request (a second of slack for two clocks on one host).
    const usedAt = Date.parse(uses[0]!.used_at);
    expect(usedAt).toBeGreaterThan(before - 1000);
    expect(usedAt).toBeLessThan(Date.now() + 1000);
  });

  it('a fault that did not bite has no use', async () => {
    const fault = await armOnConfirm('fail_after_charge');
    // A create and a cancel are not the confirm the fault waits for.
    const intent = await newIntent();
    await stripe.paymentIntents.cancel(intent.id, {}, { idempotencyKey: randomUUID() });
    expect(await usesOf(fault)).toEqual([]);
  });

  it('a create it bit names the intent the create made; one that failed before names none', async () => {
    const admin = adminClient(processor.url);
    const after = await admin.armFault({
      account: 'acct_tenant_a',
      kind: 'fail_after_charge',
      operation: 'payment_intents.create',
    });
    const key = randomUUID();
    const created = await stripe.paymentIntents.create(
      { amount: 700, currency: 'usd' },
      { idempotencyKey: key },
    );
    expect(await usesOf(after)).toMatchObject([
      { operation: 'payment_intents.create', idempotency_key: key, object: created.id },
    ]);

    const before = await admin.armFault({
      account: 'acct_tenant_a',
      kind: 'fail_before_charge',
      operation: 'payment_intents.create',
    });
    const retried = randomUUID();
    await stripe.paymentIntents.create(
      { amount: 700, currency: 'usd' },
      { idempotencyKey: retried },
    );
    // The faulted attempt made nothing; the SDK's retry made the intent, unfaulted.
    expect(await usesOf(before)).toMatchObject([
      { operation: 'payment_intents.create', idempotency_key: retried, object: null },
    ]);
  });

  it('lists the newest use first, as many as `limit` asks', async () => {
    // A delay of nothing: it bites without failing, so no retry takes a use.
    const fault = await armOnConfirm('delay', { count: 2, delay_ms: 0 });
    const first = await newIntent();
    await stripe.paymentIntents.confirm(first.id, {}, { idempotencyKey: randomUUID() });
    const second = await newIntent();
    await stripe.paymentIntents.confirm(second.id, {}, { idempotencyKey: randomUUID() });
    expect((await usesOf(fault)).map((u) => u.object)).toEqual([second.id, first.id]);
    const response = await fetch(
      `${processor.url}/admin/faults/uses?id=${String(fault.id)}&limit=1`,
      {
        headers: { 'x-admin-token': 'once-admin' },
      },
    );
    const body = (await response.json()) as { data: { uses: Use[] }[] };
    expect(body.data[0]!.uses.map((u) => u.object)).toEqual([second.id]);
  });

  it('a webhook fault names the event whose delivery it hit', async () => {
    const fault = await adminClient(processor.url).armFault({
      account: 'acct_tenant_a',
      kind: 'duplicate_webhook',
      event_type_prefix: 'payment_intent.succeeded',
    });
    const intent = await stripe.paymentIntents.create({
      amount: 900,
      currency: 'usd',
      payment_method: 'pm_card_visa',
      confirm: true,
    });
    const outbox = await adminClient(processor.url).webhookEvents('acct_tenant_a');
    const event = outbox.data.find(
      (e) => e.type === 'payment_intent.succeeded' && e.event.data.object.id === intent.id,
    );
    expect(event).toBeDefined();
    let uses: Use[] = [];
    for (let i = 0; i < 100 && uses.length === 0; i++) {
      uses = await usesOf(fault);
      if (uses.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(uses).toMatchObject([
      { operation: 'webhooks.deliver', idempotency_key: null, object: event!.id },
    ]);
  });
});

describe('a fault counts as applied when its effect happened, not when a request took it', () => {
  /** `taken` and `applied` of one fault, as `GET /admin/faults/uses` counts them. */
  async function countsOf(fault: Record<string, unknown>) {
    const response = await fetch(`${processor.url}/admin/faults/uses?id=${String(fault.id)}`, {
      headers: { 'x-admin-token': 'once-admin' },
    });
    const body = (await response.json()) as {
      data: { taken: number; applied: number }[];
      applied_by_kind: Record<string, number>;
    };
    return { taken: body.data[0]!.taken, applied: body.data[0]!.applied };
  }

  /** A confirm as the worker sends it, without the SDK's retries: its status, or 0 for a reset. */
  const confirm = (intentId: string, key: string) =>
    fetch(`${processor.url}/v1/payment_intents/${intentId}/confirm`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer sk_test_tenant_a',
        'idempotency-key': key,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: '',
    }).then(
      (r) => r.status,
      () => 0,
    );

  for (const kind of ['fail_after_charge', 'charge_then_drop']) {
    it(`${kind}: a replay it took charged nothing, so it did not apply; a first confirm it took did`, async () => {
      const charged = await newIntent();
      const key = `confirm-${randomUUID()}`;
      expect(await confirm(charged.id, key)).toBe(200);
      const onReplay = await armOnConfirm(kind);
      // The same confirm again: the stored answer is replayed, and withheld; nothing is charged.
      expect(await confirm(charged.id, key)).not.toBe(200);
      expect(await countsOf(onReplay)).toEqual({ taken: 1, applied: 0 });

      const onCharge = await armOnConfirm(kind);
      const fresh = await newIntent();
      expect(await confirm(fresh.id, `confirm-${randomUUID()}`)).not.toBe(200);
      expect(await countsOf(onCharge)).toEqual({ taken: 1, applied: 1 });
    });
  }

  it('fail_before_charge and a read fault apply as they are taken: their refusal is the effect', async () => {
    const before = await armOnConfirm('fail_before_charge');
    const intent = await newIntent();
    expect(await confirm(intent.id, `confirm-${randomUUID()}`)).toBe(500);
    expect(await countsOf(before)).toEqual({ taken: 1, applied: 1 });
    const read = await adminClient(processor.url).armFault({
      account: 'acct_tenant_a',
      kind: 'not_found',
      operation: 'payment_intents.retrieve',
    });
    await expect(stripe.paymentIntents.retrieve(intent.id)).rejects.toThrow();
    expect(await countsOf(read)).toEqual({ taken: 1, applied: 1 });
  });
});
