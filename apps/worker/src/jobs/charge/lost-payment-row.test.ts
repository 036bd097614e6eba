import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApiDependencies, createCaller, createContext } from '@once/api';
import { seedDemoData } from '@once/db/seed';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProcessorClients } from '../../processor/processor-client.ts';
import { reconcilePayments } from '../../reconcile/reconcile-payments.ts';
import { waitForTerminal } from '../../test-support/convergence.ts';
import { type RunningProcess, startWorkerProcess } from '../../test-support/processes.ts';
import { type ProcessorUnderTest, startProcessorUnderTest } from '../../test-support/processor.ts';

// A failover to a standby that never got an acknowledged commit loses the payment, its job
// and its idempotency key; the shopper's retry with the same key then makes a new payment.
// Simulated here by deleting those rows after the charge: the processor must still have
// charged once, and the new payment must end with the first charge's intent. Refunds are lost
// the same way (with their payment, or alone): the operator's retry with the same key must
// give the money back once, and the app must show what the processor gave back. A capture or
// void lost with its payment is shown on the re-created payment as the processor holds it.
let app: TestDatabase;
let processor: ProcessorUnderTest;
let worker: RunningProcess;
let deps: ReturnType<typeof createApiDependencies>;
const TENANT = 'tenant_a';
const cart = { lines: [{ productId: 'book_sre', quantity: 1 }] };

function callerWithKey(key: string) {
  const req = new Request('http://localhost/api/trpc', {
    headers: { authorization: 'Bearer once_test_tenant_a', 'idempotency-key': key },
  });
  return createCaller(createContext({ req, resHeaders: new Headers(), ...deps }));
}

const payWithKey = (key: string) => callerWithKey(key).checkout.pay(cart);

const refundWithKey = (key: string, paymentId: string) =>
  callerWithKey(key).ops.refundPayment({ paymentId, amount: 300 });

/** The rows a lost commit takes with it: the payment, its jobs, events, refunds, actions, and the keys. */
async function loseCommit(paymentId: string, ...keys: string[]): Promise<void> {
  await app.client.sql.begin(async (tx) => {
    await tx`delete from payment_events where tenant_id = ${TENANT} and payment_id = ${paymentId}`;
    await tx`delete from outbox_jobs where tenant_id = ${TENANT} and payment_id = ${paymentId}`;
    await tx`delete from refunds where tenant_id = ${TENANT} and payment_id = ${paymentId}`;
    await tx`delete from payment_actions where tenant_id = ${TENANT} and payment_id = ${paymentId}`;
    await tx`delete from money_action_keys where tenant_id = ${TENANT} and payment_id = ${paymentId}`;
    await tx`delete from payments where tenant_id = ${TENANT} and id = ${paymentId}`;
    await tx`delete from idempotency_keys where tenant_id = ${TENANT} and key in ${tx(keys)}`;
  });
}

/** The rows a lost refund commit takes with it: the refund, its job, and the operator's key (both rows). */
async function loseRefund(refundId: string, key: string): Promise<void> {
  await app.client.sql.begin(async (tx) => {
    await tx`delete from outbox_jobs where tenant_id = ${TENANT} and payload->>'refundId' = ${refundId}`;
    await tx`delete from refunds where tenant_id = ${TENANT} and id = ${refundId}`;
    await tx`delete from money_action_keys where tenant_id = ${TENANT} and key = ${key}`;
    await tx`delete from idempotency_keys where tenant_id = ${TENANT} and key = ${key}`;
  });
}

async function waitForRefund(refundId: string): Promise<string> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
    const [row] = await app.client.sql<{ status: string }[]>`
      select status from refunds where tenant_id = ${TENANT} and id = ${refundId}`;
    if (row && ['succeeded', 'failed'].includes(row.status)) return row.status;
  }
  throw new Error(`refund ${refundId} not final after 30 s`);
}

async function waitForStatus(paymentId: string, status: string) {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
    const [row] = await app.client.sql<{ status: string; amount_captured: number | null }[]>`
      select status, amount_captured from payments where tenant_id = ${TENANT} and id = ${paymentId}`;
    if (row?.status === status) return row;
  }
  throw new Error(`payment ${paymentId} not ${status} after 30 s`);
}

/** Waits until the charge's answer is recorded (the payment left `processing` and `unknown`). */
async function waitForSettled(paymentId: string) {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
    const [row] = await app.client.sql<
      { status: string; failure_code: string | null; intent: string | null }[]
    >`
      select status, failure_code, processor_payment_intent_id as intent from payments
      where tenant_id = ${TENANT} and id = ${paymentId}`;
    if (row && !['processing', 'unknown'].includes(row.status)) return row;
  }
  throw new Error(`payment ${paymentId} not settled after 30 s`);
}

/** What the timeline's events of one kind say the payment took over from an earlier one. */
async function adoptedOnTimeline(paymentId: string, kind: string) {
  const rows = await app.client.sql<{ adopted: Record<string, unknown> }[]>`
    select detail->'adopted' as adopted from payment_events
    where tenant_id = ${TENANT} and payment_id = ${paymentId} and kind = ${kind}
      and detail ? 'adopted'`;
  return rows.map((row) => row.adopted);
}

/** The processor's charges and refunds of one intent (amounts). */
async function ledgerOfIntent(intent: string) {
  const rows = await processor.sql<{ kind: string; amount: number }[]>`
    select kind, amount::int as amount from ledger_entries
    where payment_intent_id = ${intent} order by seq`;
  return rows;
}

/** What the app holds refunded of a payment (its refunds not failed). */
async function refundedOf(paymentId: string): Promise<number> {
  const [row] = await app.client.sql<{ n: number }[]>`
    select coalesce(sum(amount), 0)::int as n from refunds
    where tenant_id = ${TENANT} and payment_id = ${paymentId} and status <> 'failed'`;
  return row!.n;
}

/** A paid checkout and its refund of 300, answered succeeded; the charge's intent. */
async function paidAndRefunded(key: string, refundKey: string) {
  const paid = await payWithKey(key);
  await waitForTerminal(app.client.sql, [paid.paymentId]);
  const refund = await refundWithKey(refundKey, paid.paymentId);
  expect(await waitForRefund(refund.refundId)).toBe('succeeded');
  const [intent] = await chargesOf([paid.paymentId]);
  return { paid, refund, intent: intent! };
}

async function chargesOf(paymentIds: string[]): Promise<string[]> {
  const rows = await processor.sql<{ intent: string }[]>`
    select payment_intent_id as intent from ledger_entries
    where kind = 'charge' and metadata->>'payment_id' = any(${paymentIds})`;
  return rows.map((row) => row.intent);
}

/** A payment's row as it is, to re-create it after its loss. */
async function rowOf(paymentId: string): Promise<Record<string, unknown>> {
  const [{ row }] = await app.client.sql<[{ row: Record<string, unknown> }]>`
    select to_jsonb(payment) as row from payments as payment where id = ${paymentId}`;
  return row;
}

/**
 * The lost payment re-created, its job gone before it recorded an intent (the reconciler's to
 * decide), then one reconciler pass; the new payment's id.
 */
async function recreatedForReconciler(row: Record<string, unknown>): Promise<string> {
  const recreated = `pay_${randomUUID().replaceAll('-', '')}`;
  const copy = {
    ...row,
    id: recreated,
    status: 'unknown',
    processor_payment_intent_id: null,
    updated_at: new Date(Date.now() - 60_000).toISOString(),
  };
  await app.client.sql`
    insert into payments
    select * from jsonb_populate_record(null::payments, ${JSON.stringify(copy)}::jsonb)`;
  await reconcilePayments({
    sql: app.client.sql,
    processorFor: createProcessorClients({ processorUrl: processor.url, timeoutMs: 5_000 }),
    log: () => {},
    olderThanMs: 1_000,
    maxRequeues: 3,
  });
  return recreated;
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

describe('a refund whose row was lost is given back once, and shown', () => {
  it('lost with its payment: the re-created payment imports it, the retry answers it', async () => {
    const key = randomUUID();
    const refundKey = randomUUID();
    const { refund, intent } = await paidAndRefunded(key, refundKey);
    await loseCommit(refund.paymentId, key, refundKey);

    const second = await payWithKey(key);
    expect((await waitForTerminal(app.client.sql, [second.paymentId])).get(second.paymentId)).toBe(
      'succeeded',
    );
    expect(await refundedOf(second.paymentId)).toBe(300);
    const again = await refundWithKey(refundKey, second.paymentId);
    await waitForRefund(again.refundId);
    expect(await ledgerOfIntent(intent)).toEqual([
      { kind: 'charge', amount: second.amount },
      { kind: 'refund', amount: 300 },
    ]);
    expect(await refundedOf(second.paymentId)).toBe(300);
    expect(again).toMatchObject({ refundId: refund.refundId, amount: 300, status: 'succeeded' });
  });

  it('lost with its payment, the re-created payment settled by the reconciler: it imports the refund', async () => {
    const key = randomUUID();
    const refundKey = randomUUID();
    const { paid, refund } = await paidAndRefunded(key, refundKey);
    const row = await rowOf(paid.paymentId);
    await loseCommit(refund.paymentId, key, refundKey);
    const recreated = await recreatedForReconciler(row);
    expect(await waitForTerminal(app.client.sql, [recreated])).toEqual(
      new Map([[recreated, 'succeeded']]),
    );
    expect(await refundedOf(recreated)).toBe(300);
  });

  it('lost with its payment, not imported: the retry finds the refund its key already made', async () => {
    const key = randomUUID();
    const refundKey = randomUUID();
    const { refund, intent } = await paidAndRefunded(key, refundKey);
    await loseCommit(refund.paymentId, key, refundKey);
    const second = await payWithKey(key);
    await waitForTerminal(app.client.sql, [second.paymentId]);
    // As if the re-created payment had been settled elsewhere (the reconciler), not importing:
    // the retry sends the refund for the new payment under the key of the first one's.
    await app.client
      .sql`delete from refunds where tenant_id = ${TENANT} and id = ${refund.refundId}`;

    const again = await refundWithKey(refundKey, second.paymentId);
    expect(await waitForRefund(again.refundId)).toBe('succeeded');
    expect(await ledgerOfIntent(intent)).toEqual([
      { kind: 'charge', amount: second.amount },
      { kind: 'refund', amount: 300 },
    ]);
    expect(await refundedOf(second.paymentId)).toBe(300);
  });

  it('lost alone: the retry under the same key makes the same refund, replayed by the processor', async () => {
    const key = randomUUID();
    const refundKey = randomUUID();
    const { paid, refund, intent } = await paidAndRefunded(key, refundKey);
    await loseRefund(refund.refundId, refundKey);

    const again = await refundWithKey(refundKey, paid.paymentId);
    expect(await waitForRefund(again.refundId)).toBe('succeeded');
    expect(await ledgerOfIntent(intent)).toEqual([
      { kind: 'charge', amount: paid.amount },
      { kind: 'refund', amount: 300 },
    ]);
    expect(await refundedOf(paid.paymentId)).toBe(300);
    expect(again.refundId).toBe(refund.refundId);
  });
});

describe('a capture lost with its payment is shown on the re-created payment', () => {
  it('the re-created payment takes the captured amount, not the whole authorisation', async () => {
    const key = randomUUID();
    const manual = { ...cart, capture: 'manual' as const };
    const first = await callerWithKey(key).checkout.pay(manual);
    await waitForStatus(first.paymentId, 'authorized');
    const amount = first.amount - 100;
    await callerWithKey(randomUUID()).ops.capturePayment({ paymentId: first.paymentId, amount });
    await waitForStatus(first.paymentId, 'captured');
    await loseCommit(first.paymentId, key);

    const second = await callerWithKey(key).checkout.pay(manual);
    expect(await waitForStatus(second.paymentId, 'captured')).toEqual({
      status: 'captured',
      amount_captured: amount,
    });
  });

  it('the operator’s retry under its key is answered with the capture taken over; nothing is captured twice', async () => {
    const key = randomUUID();
    const captureKey = randomUUID();
    const manual = { ...cart, capture: 'manual' as const };
    const first = await callerWithKey(key).checkout.pay(manual);
    await waitForStatus(first.paymentId, 'authorized');
    const amount = first.amount - 100;
    await callerWithKey(captureKey).ops.capturePayment({ paymentId: first.paymentId, amount });
    const { processor_payment_intent_id: intent } = await rowOf(first.paymentId);
    await waitForStatus(first.paymentId, 'captured');
    await loseCommit(first.paymentId, key, captureKey);
    const second = await callerWithKey(key).checkout.pay(manual);
    await waitForStatus(second.paymentId, 'captured');

    const again = await callerWithKey(captureKey).ops.capturePayment({
      paymentId: second.paymentId,
      amount,
    });
    expect(again).toMatchObject({ kind: 'capture', status: 'succeeded', amount });
    // Another amount, or a void, is no longer possible: the authorisation ended.
    for (const other of [
      callerWithKey(randomUUID()).ops.capturePayment({ paymentId: second.paymentId, amount: 1 }),
      callerWithKey(randomUUID()).ops.voidPayment({ paymentId: second.paymentId }),
    ]) {
      await expect(other).rejects.toMatchObject({ cause: { code: 'payment_not_authorized' } });
    }
    expect(await ledgerOfIntent(intent as string)).toEqual([{ kind: 'charge', amount }]);
  });
});

describe('a void lost with its payment is shown on the re-created payment', () => {
  const manual = { ...cart, capture: 'manual' as const };

  /** A manual-capture checkout authorised, voided by an operator, then lost; its row and intent. */
  async function voidedThenLost(key: string) {
    const first = await callerWithKey(key).checkout.pay(manual);
    await waitForStatus(first.paymentId, 'authorized');
    await callerWithKey(randomUUID()).ops.voidPayment({ paymentId: first.paymentId });
    await waitForStatus(first.paymentId, 'voided');
    const row = await rowOf(first.paymentId);
    await loseCommit(first.paymentId, key);
    return { row, intent: row.processor_payment_intent_id as string };
  }

  it('the worker settles the re-created payment voided, taken over from the earlier intent', async () => {
    const key = randomUUID();
    const { intent } = await voidedThenLost(key);

    const second = await callerWithKey(key).checkout.pay(manual);
    expect(await waitForSettled(second.paymentId)).toEqual({
      status: 'voided',
      failure_code: null,
      intent,
    });
    expect(await adoptedOnTimeline(second.paymentId, 'outcome.recorded')).toEqual([
      { intent, voided: true, refundsImported: [] },
    ]);
    expect(await ledgerOfIntent(intent)).toEqual([]);
  });

  it('the reconciler settles the re-created payment voided, taken over from the earlier intent', async () => {
    const { row, intent } = await voidedThenLost(randomUUID());
    const recreated = await recreatedForReconciler(row);
    expect(await waitForSettled(recreated)).toEqual({
      status: 'voided',
      failure_code: null,
      intent,
    });
    expect(await adoptedOnTimeline(recreated, 'reconciler.decided')).toEqual([
      { intent, voided: true, refundsImported: [] },
    ]);
  });

  it('an intent canceled before any charge (a challenge abandoned) still settles failed', async () => {
    const key = randomUUID();
    const challenged = { ...cart, paymentMethod: 'pm_card_threeDSecure2Required' };
    const first = await callerWithKey(key).checkout.pay(challenged);
    const { intent } = await waitForSettled(first.paymentId);
    expect((await rowOf(first.paymentId)).status).toBe('requires_action');
    const sdk = createProcessorClients({ processorUrl: processor.url, timeoutMs: 5_000 });
    await sdk('sk_test_tenant_a').paymentIntents.cancel(intent!, {
      cancellation_reason: 'abandoned',
    });
    await loseCommit(first.paymentId, key);

    const second = await callerWithKey(key).checkout.pay(challenged);
    expect(await waitForSettled(second.paymentId)).toEqual({
      status: 'failed',
      failure_code: 'canceled_not_charged',
      intent,
    });
  });
});
