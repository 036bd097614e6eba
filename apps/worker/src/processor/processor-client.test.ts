import { randomUUID } from 'node:crypto';
import {
  adminClient,
  createProcessorTestDatabase,
  type RunningProcessor,
  startTestProcessor,
} from '@once/processor/testing';
import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createProcessorClient } from './processor-client.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;

beforeAll(async () => {
  database = await createProcessorTestDatabase('worker_processor_client');
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

const client = () =>
  createProcessorClient('sk_test_tenant_a', {
    processorUrl: processor.url,
    timeoutMs: 5_000,
    limitRetry: { retries: 3, baseDelayMs: 20, maxDelayMs: 80 },
  });

const charge = (key: string) =>
  client().paymentIntents.create(
    { amount: 2500, currency: 'usd', payment_method: 'pm_card_visa', confirm: true },
    { idempotencyKey: key },
  );

/** The keys the processor saw on each request this fault refused, oldest first. */
async function refusedKeys(fault: Record<string, unknown>): Promise<(string | null)[]> {
  const response = await fetch(`${processor.url}/admin/faults/uses?id=${String(fault.id)}`, {
    headers: { 'x-admin-token': 'once-admin' },
  });
  const body = (await response.json()) as {
    data: { uses: { idempotency_key: string | null }[] }[];
  };
  return (body.data[0]?.uses ?? []).map((u) => u.idempotency_key).reverse();
}

const arm = (kind: string, count: number) =>
  admin().armFault({ account: 'acct_tenant_a', kind, count, operation: 'payment_intents.create' });

describe("the worker's processor client retries 429s in place, with the same key", () => {
  it.each(['rate_limit', 'lock_timeout'])(
    '%s twice: retried with the same key, charged once',
    async (kind) => {
      const fault = await arm(kind, 2);
      const key = randomUUID();
      const intent = await charge(key);
      expect(intent.status).toBe('succeeded');
      expect(await refusedKeys(fault)).toEqual([key, key]);
      expect((await admin().ledger({ idempotency_key: key })).charge_count).toBe(1);
    },
  );

  it('gives up after its retries: the 429 reaches the caller (the outbox retries later)', async () => {
    const fault = await arm('lock_timeout', 10);
    const key = randomUUID();
    await expect(charge(key)).rejects.toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    expect(await refusedKeys(fault)).toEqual([key, key, key, key]);
    expect((await admin().ledger({ idempotency_key: key })).charge_count).toBe(0);
  });

  it('does not retry a 500 in place: doubtful answers are the outbox’s', async () => {
    const fault = await arm('fail_before_charge', 2);
    await expect(charge(randomUUID())).rejects.toMatchObject({ statusCode: 500 });
    expect(await refusedKeys(fault)).toHaveLength(1);
  });
});
