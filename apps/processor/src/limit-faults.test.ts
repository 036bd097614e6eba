import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningProcessor } from './start-processor.ts';
import { adminClient } from './testing/admin-client.ts';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { stripeClient } from './testing/stripe-client.ts';
import { startTestProcessor } from './testing/test-processor.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;

beforeAll(async () => {
  database = await createProcessorTestDatabase('limit_faults');
  processor = await startTestProcessor({ databaseUrl: database.url });
}, 60_000);

afterAll(async () => {
  await processor?.stop();
  await database?.drop();
});

const admin = () => adminClient(processor.url);
beforeEach(async () => {
  await admin().clearFaults();
});

/** The SDK without retries of its own: each call is one request. */
const oneShot = () =>
  new Stripe('sk_test_tenant_a', {
    host: '127.0.0.1',
    port: Number(new URL(processor.url).port),
    protocol: 'http',
    maxNetworkRetries: 0,
  });

const create = (client: Stripe, key: string) =>
  client.paymentIntents.create(
    { amount: 1500, currency: 'usd', payment_method: 'pm_card_visa', confirm: true },
    { idempotencyKey: key },
  );

async function uses(faultId: unknown) {
  const response = await fetch(`${processor.url}/admin/faults/uses?id=${String(faultId)}`, {
    headers: { 'x-admin-token': 'once-admin' },
  });
  const body = (await response.json()) as {
    data: { taken: number; uses: { idempotency_key: string | null; operation: string }[] }[];
    by_kind: Record<string, number>;
  };
  return body;
}

describe('rate_limit and lock_timeout: 429s before the key layer, as Stripe sends them', () => {
  it('rate_limit answers 429 code rate_limit without Stripe-Should-Retry; the same key then runs once', async () => {
    const fault = await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'rate_limit',
      operation: 'payment_intents.create',
    });
    const key = randomUUID();
    const refused = await create(oneShot(), key).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    const error = refused as InstanceType<typeof Stripe.errors.StripeRateLimitError>;
    expect([error.statusCode, error.code, error.type]).toEqual([
      429,
      'rate_limit',
      'StripeRateLimitError',
    ]);
    expect(error.rawType).toBe('invalid_request_error');
    expect(error.headers?.['stripe-should-retry']).toBeUndefined();

    // The key was not used: the retry runs (not a replay) and charges once.
    const intent = await create(oneShot(), key);
    expect(intent.status).toBe('succeeded');
    expect(intent.lastResponse.headers['idempotent-replayed']).toBeUndefined();
    expect((await admin().ledger({ idempotency_key: key })).charge_count).toBe(1);
    const counted = await uses(fault.id);
    expect(counted.data[0]?.taken).toBe(1);
    expect(counted.data[0]?.uses).toEqual([
      expect.objectContaining({ operation: 'payment_intents.create', idempotency_key: key }),
    ]);
  });

  it('refuses before the key layer: even a finished key is refused, not replayed', async () => {
    const key = randomUUID();
    await create(oneShot(), key);
    await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'rate_limit',
      operation: 'payment_intents.create',
    });
    await expect(create(oneShot(), key)).rejects.toMatchObject({ statusCode: 429 });
    const replay = await create(oneShot(), key);
    expect(replay.lastResponse.headers['idempotent-replayed']).toBe('true');
  });

  it('lock_timeout answers 429 code lock_timeout with Stripe-Should-Retry: true', async () => {
    await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'lock_timeout',
      operation: 'payment_intents.create',
    });
    const refused = await create(oneShot(), randomUUID()).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    const error = refused as InstanceType<typeof Stripe.errors.StripeRateLimitError>;
    expect([error.statusCode, error.code, error.rawType]).toEqual([
      429,
      'lock_timeout',
      'invalid_request_error',
    ]);
    expect(error.headers?.['stripe-should-retry']).toBe('true');
  });

  it('the official SDK retries a lock_timeout by itself with the same key, and not a rate_limit', async () => {
    const lock = await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'lock_timeout',
      operation: 'payment_intents.create',
    });
    const key = randomUUID();
    const intent = await create(stripeClient(processor.url, 'sk_test_tenant_a'), key);
    expect(intent.status).toBe('succeeded');
    expect((await uses(lock.id)).data[0]?.uses.map((u) => u.idempotency_key)).toEqual([key]);
    expect((await admin().ledger({ idempotency_key: key })).charge_count).toBe(1);

    await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'rate_limit',
      operation: 'payment_intents.create',
    });
    await expect(
      create(stripeClient(processor.url, 'sk_test_tenant_a'), randomUUID()),
    ).rejects.toBeInstanceOf(Stripe.errors.StripeRateLimitError);
  });

  it('hits only the operation it names: a confirm fault never refuses a create', async () => {
    await admin().armFault({
      account: 'acct_tenant_a',
      kind: 'rate_limit',
      operation: 'payment_intents.confirm',
    });
    const created = await oneShot().paymentIntents.create(
      { amount: 1500, currency: 'usd', payment_method: 'pm_card_visa' },
      { idempotencyKey: randomUUID() },
    );
    expect(created.status).toBe('requires_confirmation');
    await expect(
      oneShot().paymentIntents.confirm(created.id, {}, { idempotencyKey: randomUUID() }),
    ).rejects.toMatchObject({ statusCode: 429, code: 'rate_limit' });
  });

  it('refuses lag_ms on a limit fault (nothing ran, so nothing can lag)', async () => {
    await expect(
      admin().armFault({ account: 'acct_tenant_a', kind: 'lock_timeout', lag_ms: 1000 }),
    ).rejects.toThrow(/lag_ms applies to faults that answer after the work/);
  });
});
