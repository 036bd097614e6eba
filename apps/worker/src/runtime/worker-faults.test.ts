import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectConvergedInvariantHolds,
  ledgerChargesFor,
  waitForTerminal,
} from '../test-support/convergence.ts';
import { type RunningProcess, startWorkerProcess } from '../test-support/processes.ts';
import { type ProcessorUnderTest, startProcessorUnderTest } from '../test-support/processor.ts';
import { seedCheckout, seedTenants } from '../test-support/seed-checkouts.ts';

// Real processes: the mock processor (its own database) and a worker, both via tsx.
let app: TestDatabase;
let processor: ProcessorUnderTest;
let worker: RunningProcess;

const expectInvariantHolds = () => expectConvergedInvariantHolds(app.url, processor.database.url);

/**
 * Arms a fault and returns a reader of how often it bit, as the processor counts it (uses whose
 * effect happened, `fault_uses.applied_at`): a fault test proves nothing unless its fault was
 * applied, and a request that only took it (a replay, a 409) applied nothing.
 */
async function armCounted(fault: Record<string, unknown>): Promise<() => Promise<number>> {
  const before = new Set(
    (await processor.sql<{ id: string }[]>`select id from faults`).map((r) => r.id),
  );
  await processor.armFault(fault);
  const armed = (await processor.sql<{ id: string }[]>`select id from faults`).filter(
    (r) => !before.has(r.id),
  );
  expect(armed).toHaveLength(1);
  return async () =>
    (
      await processor.sql<{ applied: number }[]>`
        select count(*)::int as applied from fault_uses
        where fault_id = ${armed[0]!.id} and applied_at is not null`
    )[0]!.applied;
}

beforeAll(async () => {
  app = await createTestDatabase('worker_faults');
  await seedTenants(app.client.sql);
  processor = await startProcessorUnderTest('worker_faults_processor');
  worker = await startWorkerProcess(
    { DATABASE_URL: app.url, PROCESSOR_URL: processor.url },
    'w-faults',
  );
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await processor?.close();
  await app?.drop();
});

describe('worker against the real mock processor', () => {
  it('charges a checkout once and records a decline as a definite outcome', async () => {
    const { sql } = app.client;
    const paid = await seedCheckout(sql);
    const declined = await seedCheckout(sql, { paymentMethod: 'pm_card_chargeDeclined' });
    const statuses = await waitForTerminal(sql, [paid.paymentId, declined.paymentId]);
    expect(statuses.get(paid.paymentId)).toBe('succeeded');
    expect(statuses.get(declined.paymentId)).toBe('declined');
    const [row] = await sql`select failure_code from payments where id = ${declined.paymentId}`;
    expect(row?.failure_code).toEqual(expect.any(String));
    expect(await ledgerChargesFor(processor.sql, paid.paymentId)).toBe(1);
    expect(await ledgerChargesFor(processor.sql, declined.paymentId)).toBe(0);
    // A decline is not retried: one claim only.
    const [job] =
      await sql`select attempts, status from outbox_jobs where payment_id = ${declined.paymentId}`;
    expect(job).toEqual({ attempts: 1, status: 'done' });
    await expectInvariantHolds();
  });

  it.each([
    ['fail_before_charge', { kind: 'fail_before_charge' }],
    ['charge_then_drop', { kind: 'charge_then_drop' }],
    ['fail_after_charge', { kind: 'fail_after_charge' }],
    [
      'delay past the timeout, after charging',
      { kind: 'delay', delay_ms: 2_500, when: 'after_charge' },
    ],
    [
      'delay past the timeout, before charging',
      { kind: 'delay', delay_ms: 2_500, when: 'before_charge' },
    ],
  ])('%s: the payment ends succeeded with exactly one charge', async (_name, fault) => {
    const { sql } = app.client;
    const taken = await armCounted(fault);
    const checkout = await seedCheckout(sql);
    const statuses = await waitForTerminal(sql, [checkout.paymentId]);
    expect(statuses.get(checkout.paymentId)).toBe('succeeded');
    expect(await ledgerChargesFor(processor.sql, checkout.paymentId)).toBe(1);
    // The fault made the first request ambiguous, so it was sent again with the same key
    // (by the outbox's retry, or for a dropped connection by the SDK's one built-in retry).
    const requests = processor.output.filter((line) =>
      line.includes(`key=${checkout.downstreamKey}`),
    );
    expect(requests.length).toBeGreaterThan(1);
    // The processor applied the fault (to this payment's first request: nothing else ran).
    expect(await taken()).toBe(1);
    await expectInvariantHolds();
  });

  it('reconciles a payment left unknown after a charge whose response was lost', async () => {
    const { sql } = app.client;
    // On the confirm (step B): the intent's id is recorded, the charge's answer is lost.
    const taken = await armCounted({
      kind: 'fail_after_charge',
      operation: 'payment_intents.confirm',
    });
    const checkout = await seedCheckout(sql, { maxAttempts: 1 });
    const statuses = await waitForTerminal(sql, [checkout.paymentId]);
    expect(statuses.get(checkout.paymentId)).toBe('succeeded');
    const jobs = await sql`select status from outbox_jobs where payment_id = ${checkout.paymentId}`;
    // The only job died (retries exhausted); the reconciler retrieved the intent by id.
    expect(jobs.map((j) => j.status)).toEqual(['dead']);
    expect(await ledgerChargesFor(processor.sql, checkout.paymentId)).toBe(1);
    expect(await taken()).toBe(1);
    await expectInvariantHolds();
  });

  it('re-enqueues with the same downstream key when the processor never saw the charge', async () => {
    const { sql } = app.client;
    const taken = await armCounted({ kind: 'fail_before_charge' });
    const checkout = await seedCheckout(sql, { maxAttempts: 1 });
    const statuses = await waitForTerminal(sql, [checkout.paymentId]);
    expect(statuses.get(checkout.paymentId)).toBe('succeeded');
    const jobs = await sql`
      select status, downstream_key, payload->>'paymentMethod' as payment_method
      from outbox_jobs where payment_id = ${checkout.paymentId} order by created_at`;
    expect(jobs.map((j) => j.status)).toEqual(['dead', 'done']);
    expect(jobs.map((j) => j.payment_method)).toEqual(['pm_card_visa', 'pm_card_visa']);
    expect(new Set(jobs.map((j) => j.downstream_key))).toEqual(new Set([checkout.downstreamKey]));
    expect(await ledgerChargesFor(processor.sql, checkout.paymentId)).toBe(1);
    expect(await taken()).toBe(1);
    await expectInvariantHolds();
  });

  it('survives pg_terminate_backend on all its connections mid-run', async () => {
    const { sql } = app.client;
    const checkouts = await Promise.all(Array.from({ length: 20 }, () => seedCheckout(sql)));
    const admin = postgres(app.adminUrl, { max: 1, onnotice: () => {} });
    // Backends pg_terminate_backend answered true for, per round: a storm that terminated
    // nothing (no worker connection matched) would prove nothing.
    const terminated: number[] = [];
    try {
      for (let round = 0; round < 5; round++) {
        const [row] = await admin<{ n: number }[]>`
          select (count(*) filter (where pg_terminate_backend(pid)))::int as n
          from pg_stat_activity
          where application_name like 'once-worker%' and pid <> pg_backend_pid()`;
        terminated.push(row!.n);
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    } finally {
      await admin.end();
    }
    // The first round caught the worker's pool and its LISTEN connection mid-run.
    expect(terminated[0], `terminated per round: ${terminated.join(', ')}`).toBeGreaterThanOrEqual(
      2,
    );
    const statuses = await waitForTerminal(
      sql,
      checkouts.map((c) => c.paymentId),
    );
    expect([...statuses.values()].every((status) => status === 'succeeded')).toBe(true);
    expect(worker.child.exitCode).toBeNull();
    await expectInvariantHolds();
    // And it still wakes on NOTIFY after its LISTEN connection was killed.
    const after = await seedCheckout(sql);
    expect((await waitForTerminal(sql, [after.paymentId])).get(after.paymentId)).toBe('succeeded');
  });

  it('sweeps dead idempotency-key leases and reaps expired keys', async () => {
    const { sql } = app.client;
    await sql`
      insert into idempotency_keys (tenant_id, operation, key, fingerprint, state, owner_token,
                                    locked_until, expires_at)
      values ('tenant_a', 'checkout.pay', 'abandoned', 'f', 'in_progress', 'dead-owner',
              now() - interval '1 minute', now() + interval '1 day')`;
    await sql`
      insert into idempotency_keys (tenant_id, operation, key, fingerprint, state,
                                    response_status, expires_at)
      values ('tenant_a', 'checkout.pay', 'expired', 'f', 'completed', 200, now() - interval '1 minute')`;
    const deadline = Date.now() + 20_000;
    for (;;) {
      const rows = await sql<{ key: string; state: string }[]>`
        select key, state from idempotency_keys
        where tenant_id = 'tenant_a' and key in ('abandoned', 'expired') order by key`;
      if (rows.length === 1 && rows[0]?.state === 'released') break;
      if (Date.now() > deadline) throw new Error(`not swept/reaped: ${JSON.stringify(rows)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });

  it('exits 0 on SIGTERM', async () => {
    expect(await worker.stop()).toBe(0);
    expect(worker.lines.some((line) => line.includes('worker.stopped'))).toBe(true);
  });
});
