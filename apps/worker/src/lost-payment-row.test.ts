import { randomUUID } from 'node:crypto';
import { createApiDependencies, createCaller, createContext } from '@once/api';
import { seedDemoData } from '@once/db/seed';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForTerminal } from './test-support/convergence.ts';
import { type RunningProcess, startWorkerProcess } from './test-support/processes.ts';
import { type ProcessorUnderTest, startProcessorUnderTest } from './test-support/processor.ts';

// A failover to a standby that never got an acknowledged commit loses the payment, its job
// and its idempotency key; the shopper's retry with the same key then makes a new payment.
// Simulated here by deleting those rows after the charge: the processor must still have
// charged once, and the new payment must end with the first charge's intent.
let app: TestDatabase;
let processor: ProcessorUnderTest;
let worker: RunningProcess;
let deps: ReturnType<typeof createApiDependencies>;
const TENANT = 'tenant_a';
const cart = { lines: [{ productId: 'book_sre', quantity: 1 }] };

function payWithKey(key: string) {
  const req = new Request('http://localhost/api/trpc', {
    headers: { authorization: 'Bearer once_test_tenant_a', 'idempotency-key': key },
  });
  return createCaller(createContext({ req, resHeaders: new Headers(), ...deps })).checkout.pay(
    cart,
  );
}

/** The rows a lost commit takes with it: the payment, its job, events, and the key. */
async function loseCommit(paymentId: string, key: string): Promise<void> {
  await app.client.sql.begin(async (tx) => {
    await tx`delete from payment_events where tenant_id = ${TENANT} and payment_id = ${paymentId}`;
    await tx`delete from outbox_jobs where tenant_id = ${TENANT} and payment_id = ${paymentId}`;
    await tx`delete from payments where tenant_id = ${TENANT} and id = ${paymentId}`;
    await tx`delete from idempotency_keys where tenant_id = ${TENANT} and key = ${key}`;
  });
}

async function chargesOf(paymentIds: string[]): Promise<string[]> {
  const rows = await processor.sql<{ intent: string }[]>`
    select payment_intent_id as intent from ledger_entries
    where kind = 'charge' and metadata->>'payment_id' = any(${paymentIds})`;
  return rows.map((row) => row.intent);
}

async function recreatedAfterLoss(forgetProcessorKeys: boolean) {
  const key = randomUUID();
  const first = await payWithKey(key);
  expect((await waitForTerminal(app.client.sql, [first.paymentId])).get(first.paymentId)).toBe(
    'succeeded',
  );
  const [charged] = await chargesOf([first.paymentId]);
  await loseCommit(first.paymentId, key);
  // Past the processor's retention (24 h at Stripe): it no longer knows the create's key.
  if (forgetProcessorKeys) await processor.sql`delete from idempotency_keys`;

  const second = await payWithKey(key);
  expect(second.paymentId).not.toBe(first.paymentId);
  const statuses = await waitForTerminal(app.client.sql, [second.paymentId]);
  expect(statuses.get(second.paymentId)).toBe('succeeded');
  const [payment] = await app.client.sql<{ intent: string }[]>`
    select processor_payment_intent_id as intent from payments
    where tenant_id = ${TENANT} and id = ${second.paymentId}`;
  expect(await chargesOf([first.paymentId, second.paymentId])).toEqual([charged]);
  expect(payment?.intent).toBe(charged);
}

beforeAll(async () => {
  app = await createTestDatabase('worker_lost_payment_row');
  await seedDemoData(app.client.db);
  processor = await startProcessorUnderTest('worker_lost_payment_row_processor');
  deps = createApiDependencies({
    db: app.client.db,
    sessionSecret: 'test-session-secret-0123456789',
  });
  worker = await startWorkerProcess(
    { DATABASE_URL: app.url, PROCESSOR_URL: processor.url },
    'w-lost-row',
  );
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await processor?.close();
  await app?.drop();
});

describe('a payment re-created after its row was lost charges nobody twice', () => {
  it('while the processor remembers the key: one charge, adopted by the new payment', async () => {
    await recreatedAfterLoss(false);
  });

  it('past the processor’s key retention: found by metadata before charging', async () => {
    await recreatedAfterLoss(true);
  });
});
