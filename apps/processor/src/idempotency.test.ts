import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcessor } from './start-processor.ts';
import { adminClient } from './testing/admin-client.ts';
import { formPost } from './testing/form-post.ts';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { startTestProcessor } from './testing/test-processor.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;

beforeAll(async () => {
  database = await createProcessorTestDatabase('idem');
  processor = await startTestProcessor({
    databaseUrl: database.url,
  });
});

afterAll(async () => {
  await processor?.stop();
  await database?.drop();
});

const charge = (order: string, amount = 1200) =>
  `amount=${amount}&currency=usd&payment_method=pm_card_visa&confirm=true&metadata[order]=${order}`;
const ledgerOf = (key: string) => adminClient(processor.url).ledger({ idempotency_key: key });

describe('Idempotency-Key, the way Stripe honours it', () => {
  it('replays the first result with Idempotent-Replayed: true and charges once', async () => {
    const key = randomUUID();
    const first = await formPost(processor.url, '/v1/payment_intents', charge('r1'), {
      idempotencyKey: key,
    });
    expect(first.status).toBe(200);
    expect(first.replayed).toBe(false);
    // Same parameters in another order: still the same request.
    const again = await formPost(
      processor.url,
      '/v1/payment_intents',
      'metadata[order]=r1&confirm=true&currency=usd&payment_method=pm_card_visa&amount=1200',
      { idempotencyKey: key },
    );
    expect(again.status).toBe(200);
    expect(again.replayed).toBe(true);
    expect(again.json).toEqual(first.json);
    expect((await ledgerOf(key)).charge_count).toBe(1);
  });

  it('refuses the same key with other parameters (400 idempotency_error), charging nothing more', async () => {
    const key = randomUUID();
    await formPost(processor.url, '/v1/payment_intents', charge('r2', 1000), {
      idempotencyKey: key,
    });
    const reused = await formPost(processor.url, '/v1/payment_intents', charge('r2', 9999), {
      idempotencyKey: key,
    });
    expect(reused.status).toBe(400);
    expect(reused.json.error).toMatchObject({ type: 'idempotency_error' });
    expect(reused.json.error.message).toContain(key);
    // Another endpoint with the same key is another request too.
    const elsewhere = await formPost(processor.url, '/v1/refunds', 'payment_intent=pi_x', {
      idempotencyKey: key,
    });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.json.error.type).toBe('idempotency_error');
    const ledger = await ledgerOf(key);
    expect(ledger.data.map((e) => e.amount)).toEqual([1000]);
  });

  it('scopes keys per account: the same key charges each account once', async () => {
    const key = randomUUID();
    const a = await formPost(processor.url, '/v1/payment_intents', charge('r3'), {
      idempotencyKey: key,
    });
    const b = await formPost(processor.url, '/v1/payment_intents', charge('r3'), {
      idempotencyKey: key,
      secretKey: 'sk_test_tenant_b',
    });
    expect([a.status, b.status, a.replayed, b.replayed]).toEqual([200, 200, false, false]);
    expect(a.json.id).not.toBe(b.json.id);
    const ledger = await ledgerOf(key);
    expect(ledger.data.map((e) => (e as unknown as { account: string }).account).sort()).toEqual([
      'acct_tenant_a',
      'acct_tenant_b',
    ]);
  });

  it('20 concurrent requests with one key charge exactly once; the rest get 409 or the replay', async () => {
    const key = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        formPost(processor.url, '/v1/payment_intents', charge('r4'), { idempotencyKey: key }),
      ),
    );
    const executed = results.filter((r) => r.status === 200 && !r.replayed);
    const replayed = results.filter((r) => r.status === 200 && r.replayed);
    const inUse = results.filter((r) => r.status === 409);
    expect(executed).toHaveLength(1);
    expect(replayed.length + inUse.length).toBe(19);
    for (const r of replayed) expect(r.json.id).toBe(executed[0]!.json.id);
    for (const r of inUse) {
      expect(r.json.error).toMatchObject({
        type: 'idempotency_error',
        code: 'idempotency_key_in_use',
      });
      expect(Number(r.retryAfter)).toBeGreaterThan(0);
    }
    const ledger = await ledgerOf(key);
    expect(ledger.charge_count).toBe(1);
    expect(ledger.data[0]!.payment_intent).toBe(executed[0]!.json.id);
  });

  it('stores a decline and replays the same 402 (same PaymentIntent, no new attempt)', async () => {
    const key = randomUUID();
    const body =
      'amount=800&currency=usd&payment_method=pm_card_chargeDeclinedInsufficientFunds&confirm=true';
    const first = await formPost(processor.url, '/v1/payment_intents', body, {
      idempotencyKey: key,
    });
    const again = await formPost(processor.url, '/v1/payment_intents', body, {
      idempotencyKey: key,
    });
    expect(first.status).toBe(402);
    expect(first.json.error).toMatchObject({
      type: 'card_error',
      code: 'card_declined',
      decline_code: 'insufficient_funds',
    });
    expect(again).toMatchObject({ status: 402, replayed: true });
    expect(again.json).toEqual(first.json);
    expect((await ledgerOf(key)).charge_count).toBe(0);
  });

  it('does not store validation errors: the key stays usable', async () => {
    const key = randomUUID();
    const bad = await formPost(processor.url, '/v1/payment_intents', 'currency=usd', {
      idempotencyKey: key,
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: 'parameter_missing', param: 'amount' });
    const badAgain = await formPost(processor.url, '/v1/payment_intents', 'currency=usd', {
      idempotencyKey: key,
    });
    expect(badAgain).toMatchObject({ status: 400, replayed: false });
  });

  it('refunds are idempotent too: a retried refund refunds once', async () => {
    const intent = await formPost(processor.url, '/v1/payment_intents', charge('r6', 3000));
    const key = randomUUID();
    const body = `payment_intent=${intent.json.id}&amount=1000`;
    const first = await formPost(processor.url, '/v1/refunds', body, { idempotencyKey: key });
    const again = await formPost(processor.url, '/v1/refunds', body, { idempotencyKey: key });
    expect(first.status).toBe(200);
    expect(again).toMatchObject({ status: 200, replayed: true });
    expect(again.json.id).toBe(first.json.id);
    const ledger = await adminClient(processor.url).ledger({
      payment_intent: intent.json.id,
      kind: 'refund',
    });
    expect(ledger.data.map((e) => e.amount)).toEqual([1000]);
  });
});
