import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import type Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adminClient } from './testing/admin-client.ts';
import { formPost } from './testing/form-post.ts';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { type SpawnedProcessor, spawnProcessor } from './testing/spawn-processor.ts';
import { stripeClient } from './testing/stripe-client.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: SpawnedProcessor;
const env = () => ({
  PROCESSOR_DATABASE_URL: database.url,
  PROCESSOR_WEBHOOK_URL: 'http://127.0.0.1:9/unused',
  PROCESSOR_WEBHOOK_BACKOFF_MS: '60000',
  PROCESSOR_IDEMPOTENCY_LEASE_MS: '1500',
});

beforeAll(async () => {
  database = await createProcessorTestDatabase('faults');
  processor = await spawnProcessor(env());
}, 60_000);

afterAll(async () => {
  await processor?.stop();
  await database?.drop();
});

const admin = () => adminClient(processor.url);
/** How many requests (or deliveries) the fault with this id bit: the processor's own count. */
async function taken(fault: Record<string, unknown>): Promise<number> {
  const response = await fetch(`${processor.url}/admin/faults/uses?id=${String(fault.id)}`, {
    headers: { 'x-admin-token': 'once-admin' },
  });
  const body = (await response.json()) as { data: { id: string; taken: number }[] };
  expect(body.data.map((f) => f.id)).toEqual([fault.id]);
  return body.data[0]!.taken;
}
beforeEach(async () => {
  await admin().clearFaults();
});

const payParams = (order: string): Stripe.PaymentIntentCreateParams => ({
  amount: 4200,
  currency: 'usd',
  payment_method: 'pm_card_visa',
  confirm: true,
  metadata: { order },
});

/** Sends the same request again until it is a replay: proves the first attempt has finished. */
async function settledReplay(key: string, order: string) {
  const body = `amount=4200&currency=usd&payment_method=pm_card_visa&confirm=true&metadata[order]=${order}`;
  for (let i = 0; i < 100; i++) {
    const r = await formPost(processor.url, '/v1/payment_intents', body, { idempotencyKey: key });
    if (r.status === 200 && r.replayed) return r;
    expect(r.status, JSON.stringify(r.json)).toBe(409);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the first attempt never finished');
}

describe('fault injection, with the official SDK retrying (processor as a child process)', () => {
  it('charge_then_drop: the charge commits, the socket dies, the SDK retry gets the stored result', async () => {
    const fault = await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'charge_then_drop',
      method: 'POST',
      path_prefix: '/v1/payment_intents',
    });
    const key = randomUUID();
    const intent = await stripeClient(processor.url, 'sk_test_tenant_a').paymentIntents.create(
      payParams('drop'),
      { idempotencyKey: key },
    );
    expect(intent.status).toBe('succeeded');
    expect(intent.lastResponse.headers['idempotent-replayed']).toBe('true');
    const ledger = await admin().ledger({ idempotency_key: key });
    expect(ledger.charge_count).toBe(1);
    expect(ledger.data[0]!.payment_intent).toBe(intent.id);
    expect(processor.output.join('\n')).toContain('fault charge_then_drop');
    expect(await taken(fault)).toBe(1);
    expect(processor.output.join('\n')).not.toMatch(/internal error|Unhandled|ERR_/);
  });

  it('fail_after_charge: 500 after the commit; the SDK retry gets the stored success', async () => {
    const fault = await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'fail_after_charge',
      method: 'POST',
    });
    const key = randomUUID();
    const intent = await stripeClient(processor.url, 'sk_test_tenant_a').paymentIntents.create(
      payParams('after'),
      { idempotencyKey: key },
    );
    expect(intent.lastResponse.headers['idempotent-replayed']).toBe('true');
    const ledger = await admin().ledger({ idempotency_key: key });
    expect(ledger.charge_count).toBe(1);
    expect(ledger.data[0]!.payment_intent).toBe(intent.id);
    // The 500 the SDK retried was the fault's: it bit the first attempt and only that one.
    expect(await taken(fault)).toBe(1);
  });

  it('fail_before_charge: 500 with nothing charged; a retry runs for real, once', async () => {
    const fault = await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'fail_before_charge',
      count: 1,
    });
    const key = randomUUID();
    const body = 'amount=4200&currency=usd&payment_method=pm_card_visa&confirm=true';
    const failed = await formPost(processor.url, '/v1/payment_intents', body, {
      idempotencyKey: key,
    });
    expect(failed.status).toBe(500);
    expect(failed.json.error.type).toBe('api_error');
    expect((await admin().ledger({ idempotency_key: key })).charge_count).toBe(0);
    const retried = await formPost(processor.url, '/v1/payment_intents', body, {
      idempotencyKey: key,
    });
    expect(retried).toMatchObject({ status: 200, replayed: false });
    expect((await admin().ledger({ idempotency_key: key })).charge_count).toBe(1);
    expect(await taken(fault)).toBe(1);
  });

  it('fail_before_charge on every SDK attempt: the SDK gives up and nothing was charged', async () => {
    const fault = await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'fail_before_charge',
      count: 3,
    });
    const key = randomUUID();
    await expect(
      stripeClient(processor.url, 'sk_test_tenant_a').paymentIntents.create(payParams('before'), {
        idempotencyKey: key,
      }),
    ).rejects.toMatchObject({ statusCode: 500, type: 'StripeAPIError' });
    expect((await admin().ledger({ idempotency_key: key })).charge_count).toBe(0);
    expect((await admin().listFaults('acct_tenant_a')).data).toEqual([]);
    expect(await taken(fault)).toBe(3);
  });

  it.each(['before_charge', 'after_charge'] as const)(
    'delay %s past the client timeout: whatever the SDK saw, the key charged exactly once',
    async (when) => {
      const fault = await admin().armFault({
        account: 'acct_tenant_a',
        kind: 'delay',
        delay_ms: 2500,
        when,
      });
      const key = randomUUID();
      const order = `delay-${when}`;
      const outcome = await stripeClient(processor.url, 'sk_test_tenant_a', { timeout: 1000 })
        .paymentIntents.create(payParams(order), { idempotencyKey: key })
        .then(
          (intent) => ({ intent }),
          (error: unknown) => ({ error }),
        );
      const replay = await settledReplay(key, order);
      const ledger = await admin().ledger({ idempotency_key: key });
      expect(ledger.charge_count).toBe(1);
      expect(ledger.data[0]!.payment_intent).toBe(replay.json.id);
      if ('intent' in outcome) expect(outcome.intent.id).toBe(replay.json.id);
      expect(await taken(fault)).toBe(1);
    },
  );

  it('a confirm held by a delay fault never charges after a cancel of its intent', async () => {
    const stripe = stripeClient(processor.url, 'sk_test_tenant_a');
    const created = await stripe.paymentIntents.create({
      amount: 4200,
      currency: 'usd',
      payment_method: 'pm_card_visa',
      metadata: { order: 'held-confirm' },
    });
    await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'delay',
      delay_ms: 1_500,
      when: 'before_charge',
      method: 'POST',
      path_prefix: `/v1/payment_intents/${created.id}/confirm`,
    });
    const held = formPost(processor.url, `/v1/payment_intents/${created.id}/confirm`, '', {
      idempotencyKey: `confirm-${randomUUID()}`,
    });
    await processor.waitForLine(
      new RegExp(`fault delay on POST /v1/payment_intents/${created.id}`),
    );
    const canceled = await stripe.paymentIntents.cancel(created.id);
    expect(canceled.status).toBe('canceled');
    const late = await held;
    expect(late.status).toBe(400);
    expect(late.json).toMatchObject({ error: { code: 'payment_intent_unexpected_state' } });
    expect((await stripe.paymentIntents.retrieve(created.id)).status).toBe('canceled');
    expect((await admin().ledger({ payment_intent: created.id })).charge_count).toBe(0);
  });

  it('forgets a key after PROCESSOR_IDEMPOTENCY_RETENTION_MS: a reuse then runs anew', async () => {
    const shortLived = await spawnProcessor({
      ...env(),
      PROCESSOR_IDEMPOTENCY_RETENTION_MS: '2000',
      PROCESSOR_IDEMPOTENCY_REAP_INTERVAL_MS: '100',
    });
    try {
      const stripe = stripeClient(shortLived.url, 'sk_test_tenant_a');
      const key = `retained-${randomUUID()}`;
      const first = await stripe.paymentIntents.create(payParams('retention'), {
        idempotencyKey: key,
      });
      const replay = await stripe.paymentIntents.create(payParams('retention'), {
        idempotencyKey: key,
      });
      expect(replay.id).toBe(first.id);
      await shortLived.waitForLine(/idempotency: reaped [1-9]/, 10_000);
      const after = await stripe.paymentIntents.create(payParams('retention'), {
        idempotencyKey: key,
      });
      // This is why a client must never re-send a charge late without asking first.
      expect(after.id).not.toBe(first.id);
    } finally {
      await shortLived.stop();
    }
  });

  it('not_found: the next matching reads answer 404 for an intent that exists, then it reads again', async () => {
    const stripe = stripeClient(processor.url, 'sk_test_tenant_a');
    const intent = await stripe.paymentIntents.create(payParams('not-found'), {
      idempotencyKey: randomUUID(),
    });
    expect(intent.status).toBe('succeeded');
    const fault = await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'not_found',
      method: 'GET',
      path_prefix: '/v1/payment_intents/pi_',
      count: 1,
    });
    const missing = await stripe.paymentIntents.retrieve(intent.id).catch((e: unknown) => e);
    expect(missing).toMatchObject({ statusCode: 404, code: 'resource_missing' });
    // Used up: the same read now finds it; the charge was never undone.
    expect((await stripe.paymentIntents.retrieve(intent.id)).status).toBe('succeeded');
    expect(await taken(fault)).toBe(1);
  });

  it('lag_ms: after a charge whose answer failed, its reads answer 404 and its webhook waits, until the lag ends', async () => {
    const stripe = stripeClient(processor.url, 'sk_test_tenant_a');
    const other = await stripe.paymentIntents.create(payParams('lag-other'), {
      idempotencyKey: randomUUID(),
    });
    await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'fail_after_charge',
      method: 'POST',
      path_prefix: '/v1/payment_intents',
      lag_ms: 3_000,
    });
    const key = randomUUID();
    const failed = await formPost(
      processor.url,
      '/v1/payment_intents',
      'amount=4200&currency=usd&payment_method=pm_card_visa&confirm=true&metadata[order]=lag',
      { idempotencyKey: key },
    );
    expect(failed.status).toBe(500);
    const [charge] = (await admin().ledger({ idempotency_key: key })).data;
    expect(charge).toMatchObject({ kind: 'charge', amount: 4200 });
    const intentId = charge!.payment_intent;

    // Every read of the charged intent misses (none is used up), other intents read fine.
    for (let i = 0; i < 3; i++) {
      const missing = await stripe.paymentIntents.retrieve(intentId).catch((e: unknown) => e);
      expect(missing).toMatchObject({ statusCode: 404, code: 'resource_missing' });
    }
    expect((await stripe.paymentIntents.retrieve(other.id)).status).toBe('succeeded');
    // Its webhook was held in the charge's own transaction: no deliverer saw it earlier.
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const events = await sql<{ held: boolean }[]>`
        select next_attempt_at >= created_at + interval '2.9 seconds' as held
        from webhook_events where (payload::jsonb)->'data'->'object'->>'id' = ${intentId}`;
      expect(events.length).toBeGreaterThan(0);
      expect(events.every((e) => e.held)).toBe(true);
    } finally {
      await sql.end();
    }
    // Then the lag ends by itself: the charge was there all along.
    let found: Stripe.PaymentIntent | undefined;
    for (let i = 0; i < 100 && !found; i++) {
      found = await stripe.paymentIntents.retrieve(intentId).catch(() => undefined);
      if (!found) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(found?.status).toBe('succeeded');
  });

  it('lag_ms is refused where nothing ran, and must be a positive integer', async () => {
    for (const fault of [
      { kind: 'fail_before_charge', lag_ms: 1_000 },
      { kind: 'not_found', lag_ms: 1_000 },
      { kind: 'fail_after_charge', lag_ms: 0 },
      { kind: 'fail_after_charge', lag_ms: 'soon' },
    ]) {
      const response = await fetch(`${processor.url}/admin/faults`, {
        method: 'POST',
        headers: { 'x-admin-token': 'once-admin', 'content-type': 'application/json' },
        body: JSON.stringify({ account: 'acct_tenant_a', ...fault }),
      });
      expect(response.status, JSON.stringify(fault)).toBe(400);
    }
    expect((await admin().listFaults()).data).toEqual([]);
  });

  it('operation: a confirm fault skips a cancel and a create of the same account, and bites the confirm', async () => {
    const create = (order: string) =>
      formPost(
        processor.url,
        '/v1/payment_intents',
        `amount=4200&currency=usd&payment_method=pm_card_visa&metadata[order]=${order}`,
        { idempotencyKey: randomUUID() },
      );
    const toConfirm = await create('op-confirm');
    const toCancel = await create('op-cancel');
    expect([toConfirm.status, toCancel.status]).toEqual([200, 200]);
    const fault = await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'fail_before_charge',
      operation: 'payment_intents.confirm',
    });
    expect(fault).toMatchObject({ operation: 'payment_intents.confirm' });
    // `/v1/payment_intents/:id/cancel` shares the confirm's path prefix: the operation tells them apart.
    const cancelled = await formPost(
      processor.url,
      `/v1/payment_intents/${toCancel.json.id}/cancel`,
      '',
      { idempotencyKey: randomUUID() },
    );
    expect(cancelled.status, JSON.stringify(cancelled.json)).toBe(200);
    expect(cancelled.json.status).toBe('canceled');
    expect((await create('op-create')).status).toBe(200);
    expect(await taken(fault)).toBe(0);
    const confirmKey = randomUUID();
    const confirmed = await formPost(
      processor.url,
      `/v1/payment_intents/${toConfirm.json.id}/confirm`,
      '',
      { idempotencyKey: confirmKey },
    );
    expect(confirmed.status).toBe(500);
    expect(confirmed.json.error.message).toContain('fail_before_charge');
    expect(await taken(fault)).toBe(1);
    expect((await admin().ledger({ idempotency_key: confirmKey })).charge_count).toBe(0);
  });

  it('operation is refused with a 400 when unknown or when the fault kind cannot hit it', async () => {
    for (const fault of [
      { kind: 'fail_before_charge', operation: 'payment_intents.update' },
      { kind: 'fail_before_charge', operation: 'payment_intents.retrieve' },
      { kind: 'not_found', operation: 'payment_intents.confirm' },
      { kind: 'duplicate_webhook', operation: 'payment_intents.confirm' },
    ]) {
      const response = await fetch(`${processor.url}/admin/faults`, {
        method: 'POST',
        headers: { 'x-admin-token': 'once-admin', 'content-type': 'application/json' },
        body: JSON.stringify({ account: 'acct_tenant_a', ...fault }),
      });
      expect(response.status, JSON.stringify(fault)).toBe(400);
      const body = (await response.json()) as { error: { message: string } };
      expect(body.error.message).toMatch(/operation/);
    }
    expect((await admin().listFaults()).data).toEqual([]);
  });

  it('GET /admin/faults lists armed faults; DELETE disarms them', async () => {
    await admin().armFault({ account: 'acct_tenant_b', kind: 'fail_before_charge', count: 5 });
    const listed = await admin().listFaults('acct_tenant_b');
    expect(listed.data).toMatchObject([
      { kind: 'fail_before_charge', remaining: 5, account: 'acct_tenant_b' },
    ]);
    // Faults are per account: tenant A is unaffected.
    const a = await formPost(processor.url, '/v1/payment_intents', 'amount=100&currency=usd');
    expect(a.status).toBe(200);
    await admin().clearFaults();
    expect((await admin().listFaults()).data).toEqual([]);
    const b = await formPost(processor.url, '/v1/payment_intents', 'amount=100&currency=usd', {
      secretKey: 'sk_test_tenant_b',
    });
    expect(b.status).toBe(200);
  });
});

describe('fault consumption (GET /admin/faults/uses)', () => {
  it('counts a fault when it bit, not when it was armed; a cleared fault that bit stays counted', async () => {
    const idle = await admin().armFault({
      account: 'acct_tenant_b',
      kind: 'fail_before_charge',
      count: 2,
    });
    const bit = await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'fail_before_charge',
      count: 2,
    });
    expect(await taken(idle)).toBe(0);
    expect(await taken(bit)).toBe(0);
    const failed = await formPost(processor.url, '/v1/payment_intents', 'amount=100&currency=usd');
    expect(failed.status).toBe(500);
    expect(await taken(bit)).toBe(1);
    expect(await taken(idle)).toBe(0);
    await admin().clearFaults();
    // Disarmed: the next request runs; the use is still on record, the idle fault is gone.
    const ok = await formPost(processor.url, '/v1/payment_intents', 'amount=100&currency=usd');
    expect(ok.status).toBe(200);
    expect(await taken(bit)).toBe(1);
    const response = await fetch(`${processor.url}/admin/faults/uses?id=${String(idle.id)}`, {
      headers: { 'x-admin-token': 'once-admin' },
    });
    expect(((await response.json()) as { data: unknown[] }).data).toEqual([]);
  });
});

describe('crashes lose nothing committed', () => {
  it('SIGKILL mid-request: committed charges survive, and the in-flight key charges exactly once after restart', async () => {
    const committedKey = randomUUID();
    const committed = await formPost(
      processor.url,
      '/v1/payment_intents',
      'amount=4200&currency=usd&payment_method=pm_card_visa&confirm=true&metadata[order]=crash',
      { idempotencyKey: committedKey },
    );
    expect(committed.status).toBe(200);

    const delay = await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'delay',
      delay_ms: 20_000,
      when: 'before_charge',
    });
    const inFlightKey = randomUUID();
    const inFlight = formPost(
      processor.url,
      '/v1/payment_intents',
      'amount=4200&currency=usd&payment_method=pm_card_visa&confirm=true&metadata[order]=crash',
      { idempotencyKey: inFlightKey },
    ).catch((error: unknown) => error);
    // Wait until the request holds its key (read-only look at the store) and is held by the
    // delay inside the handler, then crash. A request that never got there fails the test:
    // a kill before it would prove nothing about a crash mid-request.
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    let held = false;
    try {
      for (let i = 0; i < 400 && !held; i++) {
        const rows = await sql`select state from idempotency_keys where key = ${inFlightKey}`;
        held = rows[0]?.state === 'in_progress';
        if (!held) await new Promise((resolve) => setTimeout(resolve, 25));
      }
    } finally {
      await sql.end();
    }
    expect(held, 'the in-flight request never held its key').toBe(true);
    await processor.waitForLine(
      new RegExp(`fault delay on POST \\S+ \\S+ key=${inFlightKey}`),
      10_000,
    );
    await processor.kill();
    expect(await inFlight).toBeInstanceOf(Error);

    processor = await spawnProcessor(env());
    await admin().clearFaults();
    // The delay bit the in-flight request (and survives the crash as a count).
    expect(await taken(delay)).toBe(1);
    expect((await admin().ledger({ idempotency_key: committedKey })).charge_count).toBe(1);
    expect((await admin().ledger({ idempotency_key: inFlightKey })).charge_count).toBe(0);
    // The dead attempt's lease runs out; the retry then runs once and later ones replay.
    const body =
      'amount=4200&currency=usd&payment_method=pm_card_visa&confirm=true&metadata[order]=crash';
    let first: Awaited<ReturnType<typeof formPost>> | undefined;
    for (let i = 0; i < 100 && !first; i++) {
      const r = await formPost(processor.url, '/v1/payment_intents', body, {
        idempotencyKey: inFlightKey,
      });
      if (r.status === 200) first = r;
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(first).toMatchObject({ status: 200, replayed: false });
    const again = await formPost(processor.url, '/v1/payment_intents', body, {
      idempotencyKey: inFlightKey,
    });
    expect(again).toMatchObject({ status: 200, replayed: true });
    expect((await admin().ledger({ idempotency_key: inFlightKey })).charge_count).toBe(1);
  }, 60_000);

  it('SIGTERM exits 0', async () => {
    const code = await processor.stop();
    expect(code).toBe(0);
    processor = await spawnProcessor(env());
  }, 30_000);
});
