import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  expectConvergedInvariantHolds,
  ledgerChargesFor,
  waitForTerminal,
} from '../test-support/convergence.ts';
import { type RunningProcess, startWorkerProcess } from '../test-support/processes.ts';
import { type ProcessorUnderTest, startProcessorUnderTest } from '../test-support/processor.ts';
import { seedCheckout, seedTenants } from '../test-support/seed-checkouts.ts';

// Workers that die, stall and compete: real OS processes, real signals.
let app: TestDatabase;
let processor: ProcessorUnderTest;
const workers: RunningProcess[] = [];

async function startWorker(id: string): Promise<RunningProcess> {
  const worker = await startWorkerProcess(
    { DATABASE_URL: app.url, PROCESSOR_URL: processor.url },
    id,
  );
  workers.push(worker);
  return worker;
}

async function armDelay(delayMs: number, when: 'before_charge' | 'after_charge'): Promise<void> {
  await processor.armFault({ kind: 'delay', delay_ms: delayMs, when });
}

const expectInvariantHolds = () => expectConvergedInvariantHolds(app.url, processor.database.url);

beforeAll(async () => {
  app = await createTestDatabase('worker_crashes');
  await seedTenants(app.client.sql);
  processor = await startProcessorUnderTest('worker_crashes_processor');
}, 120_000);

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop()));
});

afterAll(async () => {
  await processor?.close();
  await app?.drop();
});

describe('workers that crash, stall and compete', () => {
  it('a worker SIGKILLed mid-charge: another finishes the job, one charge', async () => {
    const { sql } = app.client;
    const doomed = await startWorker('w-doomed');
    // Keep the charge in flight at the processor long enough to kill the worker during it.
    await armDelay(1_000, 'after_charge');
    const checkout = await seedCheckout(sql);
    // The request has reached the processor: the worker dies with the charge in flight.
    await processor.waitForLine(new RegExp(`fault delay .*key=${checkout.downstreamKey}`));
    doomed.signal('SIGKILL');
    await doomed.exited;

    await startWorker('w-heir');
    const statuses = await waitForTerminal(sql, [checkout.paymentId]);
    expect(statuses.get(checkout.paymentId)).toBe('succeeded');
    expect(await ledgerChargesFor(processor.sql, checkout.paymentId)).toBe(1);
    const [job] =
      await sql`select attempts from outbox_jobs where payment_id = ${checkout.paymentId}`;
    const claims = await sql<{ actor: string; takeover: boolean | null }[]>`
      select actor, (detail->>'takeover')::boolean as takeover from payment_events
      where payment_id = ${checkout.paymentId} and kind = 'job.claimed' order by seq`;
    // Claimed by the killed worker, then taken over by its heir once the lease expired. On a
    // loaded machine the heir may claim it again (a confirm that outlived the processor
    // timeout): the heir each time, under the same downstream key, so one charge (above).
    expect(claims[0]).toEqual({ actor: 'worker:w-doomed', takeover: false });
    expect(claims[1]).toEqual({ actor: 'worker:w-heir', takeover: true });
    expect(claims.slice(2).every((claim) => claim.actor === 'worker:w-heir')).toBe(true);
    expect(job?.attempts).toBe(claims.length);
    await expectInvariantHolds();
  });

  it('two workers on one queue never charge a payment twice', async () => {
    const { sql } = app.client;
    const [first, second] = await Promise.all([startWorker('w-one'), startWorker('w-two')]);
    const checkouts = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        seedCheckout(sql, { tenantId: index % 2 === 0 ? 'tenant_a' : 'tenant_b' }),
      ),
    );
    const statuses = await waitForTerminal(
      sql,
      checkouts.map((c) => c.paymentId),
      60_000,
    );
    expect([...statuses.values()].every((status) => status === 'succeeded')).toBe(true);
    for (const checkout of checkouts) {
      expect(await ledgerChargesFor(processor.sql, checkout.paymentId)).toBe(1);
    }
    const claimsBy = (worker: RunningProcess) =>
      worker.lines.filter((line) => line.includes('job.claimed')).length;
    // Both really took part (not one idle while the other did everything), and between
    // them every job was claimed.
    expect(claimsBy(first!), 'claims by w-one').toBeGreaterThan(0);
    expect(claimsBy(second!), 'claims by w-two').toBeGreaterThan(0);
    expect(claimsBy(first!) + claimsBy(second!)).toBeGreaterThanOrEqual(40);
    await expectInvariantHolds();
  });

  it('a worker SIGSTOPped past its lease, then SIGCONTed, writes nothing over its successor', async () => {
    const { sql } = app.client;
    const stalled = await startWorker('w-stalled');
    await armDelay(1_000, 'before_charge');
    const checkout = await seedCheckout(sql);
    // Stall it while its request is inside the processor (holding the processor's key).
    await processor.waitForLine(new RegExp(`fault delay .*key=${checkout.downstreamKey}`));
    stalled.signal('SIGSTOP');
    try {
      await startWorker('w-successor');
      const statuses = await waitForTerminal(sql, [checkout.paymentId]);
      expect(statuses.get(checkout.paymentId)).toBe('succeeded');
    } finally {
      stalled.signal('SIGCONT');
    }
    // The stalled worker wakes up, gets its (replayed or timed-out) answer, and its guarded
    // finish is refused: the job was taken over with a new lock token.
    await stalled.waitForLine(
      new RegExp(`job\\.finished .*payment=${checkout.paymentId} result=lease_lost`),
    );
    const [job] =
      await sql`select status, attempts from outbox_jobs where payment_id = ${checkout.paymentId}`;
    expect(job?.status).toBe('done');
    expect(await ledgerChargesFor(processor.sql, checkout.paymentId)).toBe(1);
    await expectInvariantHolds();
  });
});
