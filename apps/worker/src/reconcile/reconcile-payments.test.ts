import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProcessorClient, createProcessorClients } from '../processor/processor-client.ts';
import { type ProcessorUnderTest, startProcessorUnderTest } from '../test-support/processor.ts';
import { seedCheckout, seedTenants } from '../test-support/seed-checkouts.ts';
import { reconcilePayments } from './reconcile-payments.ts';

// The reconciler in-process against the real mock processor: one merchant whose processor
// key was rotated (every lookup refused) must not starve the others.
let app: TestDatabase;
let processor: ProcessorUnderTest;

beforeAll(async () => {
  app = await createTestDatabase('reconcile_payments');
  await seedTenants(app.client.sql);
  processor = await startProcessorUnderTest('reconcile_payments_processor');
}, 120_000);

afterAll(async () => {
  await processor?.close();
  await app?.drop();
});

/** A payment whose job died (retries exhausted) `ageMinutes` ago: the reconciler's to decide. */
async function seedUndecided(tenantId: string, ageMinutes: number): Promise<string> {
  const { sql } = app.client;
  const checkout = await seedCheckout(sql, { tenantId });
  await sql`update outbox_jobs set status = 'dead' where id = ${checkout.jobId}`;
  await sql`
    update payments set status = 'unknown',
                        updated_at = now() - ${ageMinutes} * interval '1 minute'
    where id = ${checkout.paymentId}`;
  return checkout.paymentId;
}

describe('reconciler fairness', () => {
  it("a merchant with a rotated key and more undecided payments than a batch does not stop another merchant's", async () => {
    const { sql } = app.client;
    await sql`update tenants set processor_secret_key = 'sk_test_rotated' where id = 'tenant_a'`;
    const stalled: string[] = [];
    for (let i = 0; i < 6; i++) stalled.push(await seedUndecided('tenant_a', 60 - i));
    // Newer than all of tenant_a's: an oldest-first batch of 3 never reaches it.
    const other = await seedUndecided('tenant_b', 5);
    const processorFor = createProcessorClients({ processorUrl: processor.url, timeoutMs: 5_000 });
    const pass = () =>
      reconcilePayments({
        sql,
        processorFor,
        log: () => {},
        olderThanMs: 1_000,
        maxRequeues: 3,
        batchSize: 3,
      });

    const first = await pass();
    // tenant_b's payment was never sent (no intent): it is enqueued again in this pass.
    const [payment] = await sql<
      { status: string }[]
    >`select status from payments where id = ${other}`;
    expect(payment?.status).toBe('processing');
    expect(first.requeued).toBe(1);
    const jobs = await sql`
      select status from outbox_jobs where payment_id = ${other} and status = 'pending'`;
    expect(jobs).toHaveLength(1);

    // The refused lookups moved back (next check later), so the next pass sees the rest.
    const checked = await sql<{ id: string }[]>`
      select id from payments
      where id = any(${stalled}) and reconcile_after > now() and reconcile_checks = 1`;
    expect(checked).toHaveLength(2);
    const second = await pass();
    expect(second.examined).toBe(3);
    const after = await sql<{ n: number }[]>`
      select count(*)::int as n from payments where id = any(${stalled}) and reconcile_checks = 1`;
    expect(after[0]?.n).toBe(5);
  });
});

describe('the reconciler gives up only with proof', () => {
  const reconcileOnce = (overrides: Partial<Parameters<typeof reconcilePayments>[0]> = {}) =>
    reconcilePayments({
      sql: app.client.sql,
      processorFor: createProcessorClients({ processorUrl: processor.url, timeoutMs: 5_000 }),
      log: () => {},
      olderThanMs: 1_000,
      maxRequeues: 0,
      ...overrides,
    });
  const stripeB = () =>
    createProcessorClient('sk_test_tenant_b', { processorUrl: processor.url, timeoutMs: 5_000 });

  /** An undecided tenant_b payment whose recorded intent is in `confirm`'s hands or not. */
  async function seedWithIntent(
    confirm: boolean,
  ): Promise<{ paymentId: string; intentId: string }> {
    const paymentId = await seedUndecided('tenant_b', 10);
    const intent = await stripeB().paymentIntents.create({
      amount: 1999,
      currency: 'usd',
      payment_method: 'pm_card_visa',
      confirm,
      metadata: { payment_id: paymentId, tenant_id: 'tenant_b' },
    });
    await app.client.sql`
      update payments set processor_payment_intent_id = ${intent.id} where id = ${paymentId}`;
    return { paymentId, intentId: intent.id };
  }

  const statusOf = async (paymentId: string) =>
    (
      await app.client.sql<{ status: string; failure_code: string | null }[]>`
      select status, failure_code from payments where id = ${paymentId}`
    )[0];

  it('an intent never confirmed is canceled at the processor first, then the payment is failed', async () => {
    const { paymentId, intentId } = await seedWithIntent(false);
    await reconcileOnce();
    expect(await statusOf(paymentId)).toEqual({
      status: 'failed',
      failure_code: 'canceled_not_charged',
    });
    expect((await stripeB().paymentIntents.retrieve(intentId)).status).toBe('canceled');
    // A confirm that arrives now (late, re-sent) charges nobody.
    await expect(stripeB().paymentIntents.confirm(intentId)).rejects.toMatchObject({
      code: 'payment_intent_unexpected_state',
    });
  });

  it('a cancel that got no answer settles nothing: the payment waits, and the next pass cancels', async () => {
    const { paymentId, intentId } = await seedWithIntent(false);
    await processor.armFault({
      account: 'acct_tenant_b',
      kind: 'fail_before_charge',
      count: 1,
      operation: 'payment_intents.cancel',
    });
    await reconcileOnce();
    expect(await statusOf(paymentId)).toEqual({ status: 'unknown', failure_code: null });
    expect((await stripeB().paymentIntents.retrieve(intentId)).status).toBe(
      'requires_confirmation',
    );
    await app.client.sql`update payments set reconcile_after = null where id = ${paymentId}`;
    await reconcileOnce();
    expect(await statusOf(paymentId)).toEqual({
      status: 'failed',
      failure_code: 'canceled_not_charged',
    });
  });

  it('a recorded intent that charged is retrieved by id and settled succeeded, never failed', async () => {
    const { paymentId } = await seedWithIntent(true);
    const summary = await reconcileOnce();
    expect(summary.failed).toBe(0);
    expect((await statusOf(paymentId))?.status).toBe('succeeded');
  });

  it('counts a payment left undecided check after check as stuck', async () => {
    const summary = await reconcileOnce({ stuckAfterChecks: 1, maxRequeues: 3 });
    // tenant_a's rotated key: every lookup refused, so its payments stay undecided.
    expect(summary.stuck).toBeGreaterThan(0);
  });
});

describe('the re-enqueue decides from a read made after the payment lock', () => {
  /** Resolves once some backend of this database waits for a row lock. */
  async function lockWaiter(): Promise<void> {
    for (;;) {
      const [row] = await app.client.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'`;
      if (row?.n) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('a charge another reconciler re-enqueued while this one waited for the payment lock is not enqueued again', async () => {
    const { sql } = app.client;
    const paymentId = await seedUndecided('tenant_b', 10);
    const holder = await sql.reserve();
    let pass: Promise<unknown> | undefined;
    try {
      // Another reconciler is re-enqueueing this charge: it holds the payment's row lock.
      await holder`begin`;
      await holder`select id from payments where id = ${paymentId} for update`;
      pass = reconcilePayments({
        sql,
        processorFor: createProcessorClients({ processorUrl: processor.url, timeoutMs: 5_000 }),
        log: () => {},
        olderThanMs: 1_000,
        maxRequeues: 3,
      });
      // This pass found it due (no live job), asked the processor (never sent) and now waits.
      await lockWaiter();
      await holder`
        insert into outbox_jobs (tenant_id, id, kind, payment_id, downstream_key, payload)
        select tenant_id, 'job_' || gen_random_uuid(), kind, payment_id, downstream_key, payload
        from outbox_jobs where payment_id = ${paymentId}`;
      await holder`
        update payments set status = 'processing', updated_at = now() where id = ${paymentId}`;
      await holder`commit`;
      await pass;
    } finally {
      holder.release();
      await pass?.catch(() => {});
    }
    const jobs = await sql<{ status: string }[]>`
      select status from outbox_jobs where payment_id = ${paymentId} order by created_at`;
    // The dead first job and the other reconciler's: one live charge job, never two.
    expect(jobs.map((job) => job.status)).toEqual(['dead', 'pending']);
  });
});
