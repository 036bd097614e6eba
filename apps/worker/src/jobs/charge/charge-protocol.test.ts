import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  expectConvergedInvariantHolds,
  ledgerChargesFor,
  waitForTerminal,
} from '../../test-support/convergence.ts';
import { type RunningProcess, startWorkerProcess } from '../../test-support/processes.ts';
import { type ProcessorUnderTest, startProcessorUnderTest } from '../../test-support/processor.ts';
import { seedCheckout, seedTenants } from '../../test-support/seed-checkouts.ts';

// The charge path against windows that do not fit: a processor that forgets keys sooner
// than the worker retries, and a processor that holds a charge longer than every window
// of the worker. Each test runs its own processor and worker with shortened windows.
let app: TestDatabase | undefined;
let processor: ProcessorUnderTest | undefined;
let worker: RunningProcess | undefined;

afterEach(async () => {
  await worker?.stop();
  await processor?.close();
  await app?.drop();
  worker = processor = app = undefined;
});

async function startSystem(
  label: string,
  processorEnv: Record<string, string>,
  workerEnv: Record<string, string>,
) {
  app = await createTestDatabase(label);
  await seedTenants(app.client.sql);
  processor = await startProcessorUnderTest(`${label}_processor`, processorEnv);
  worker = await startWorkerProcess(
    { DATABASE_URL: app.url, PROCESSOR_URL: processor.url, ...workerEnv },
    `w-${label}`,
  );
  return { app, processor, worker };
}

describe('the charge protocol when windows do not fit', () => {
  it('a retry after the processor forgot the key charges nobody a second time', async () => {
    const { app, processor } = await startSystem(
      'charge_retention',
      {
        PROCESSOR_IDEMPOTENCY_LEASE_MS: '1000',
        PROCESSOR_IDEMPOTENCY_RETENTION_MS: '1500',
        PROCESSOR_IDEMPOTENCY_REAP_INTERVAL_MS: '100',
      },
      // Every retry comes 2 to 4 s after the failure: after the key is retained and reaped.
      { WORKER_BACKOFF_BASE_MS: '4000', WORKER_BACKOFF_MAX_MS: '4000' },
    );
    // Every answer is lost for the first four requests (the SDK re-sends once on a reset):
    // whichever request charges, its answer never arrives, and the next try comes after
    // the processor forgot the key.
    await processor.armFault({ kind: 'charge_then_drop', count: 4 });
    const checkout = await seedCheckout(app.client.sql);
    const statuses = await waitForTerminal(app.client.sql, [checkout.paymentId], 60_000);
    expect(processor.output.some((line) => /idempotency: reaped [1-9]/.test(line))).toBe(true);
    expect(await ledgerChargesFor(processor.sql, checkout.paymentId)).toBe(1);
    expect(statuses.get(checkout.paymentId)).toBe('succeeded');
    // The charging request itself (the confirm) lost its answer, and was not charged again.
    expect(
      processor.output.some((line) =>
        line.includes(`fault charge_then_drop on POST /v1/payment_intents/pi_`),
      ),
    ).toBe(true);
    await expectConvergedInvariantHolds(app.url, processor.database.url);
  }, 90_000);

  it('a charge held far longer than every worker window ends succeeded, never failed', async () => {
    const { app, processor } = await startSystem(
      'charge_held',
      {},
      {
        WORKER_PROCESSOR_TIMEOUT_MS: '500',
        WORKER_BACKOFF_BASE_MS: '100',
        WORKER_BACKOFF_MAX_MS: '400',
        WORKER_RECONCILE_AFTER_MS: '300',
        WORKER_RECONCILE_INTERVAL_MS: '300',
        WORKER_RECONCILE_MAX_REQUEUES: '1',
      },
    );
    // The confirm, the one call that charges, is held 6 s at the processor, then commits.
    await processor.armFault({
      kind: 'delay',
      delay_ms: 6_000,
      when: 'before_charge',
      operation: 'payment_intents.confirm',
    });
    const { sql } = app.client;
    const checkout = await seedCheckout(sql, { maxAttempts: 2 });
    const seen = new Set<string>();
    const deadline = Date.now() + 60_000;
    for (;;) {
      const [row] = await sql<{ status: string }[]>`
        select status from payments where id = ${checkout.paymentId}`;
      seen.add(row!.status);
      const charges = await ledgerChargesFor(processor.sql, checkout.paymentId);
      if (charges > 0 && ['succeeded', 'declined', 'failed'].includes(row!.status)) break;
      if (Date.now() > deadline) throw new Error(`not settled: ${[...seen].join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect([...seen]).not.toContain('failed');
    expect((await waitForTerminal(sql, [checkout.paymentId])).get(checkout.paymentId)).toBe(
      'succeeded',
    );
    expect(await ledgerChargesFor(processor.sql, checkout.paymentId)).toBe(1);
    // The hold really happened: the processor applied a delay (its own count of uses).
    const [held] = await processor.sql<{ n: number }[]>`
      select coalesce(sum(taken), 0)::int as n from faults where kind = 'delay'`;
    expect(held!.n).toBeGreaterThanOrEqual(1);
    await expectConvergedInvariantHolds(app.url, processor.database.url);
  }, 90_000);
});
