import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import {
  createProcessorTestDatabase,
  type RunningProcessor,
  startTestProcessor,
} from '@once/processor/testing';
import postgres from 'postgres';
import type { JobDeps } from '../jobs/processor-action-job.ts';
import { expectConvergedInvariantHolds } from './convergence.ts';
import { inProcessDeps, runDueJobsOnce } from './in-process-worker.ts';
import { seedTenants } from './seed-checkouts.ts';

/** The app's database, the real processor (in this process) and the worker's handlers over them. */
export interface InProcessSystem {
  app: TestDatabase;
  processor: RunningProcessor;
  /** A small pool on the processor's database, to read its ledger. */
  ledgerSql: postgres.Sql;
  deps: JobDeps;
  /** Claims and runs due jobs, as the dispatcher would, until none is left for the payment. */
  runJobsOf(paymentId: string): Promise<void>;
  /** The processor's ledger rows for one payment (by the metadata the worker sends). */
  ledgerOf(
    paymentId: string,
  ): Promise<{ kind: string; amount: number; idempotency_key: string | null }[]>;
  expectInvariantHolds(): Promise<void>;
  close(): Promise<void>;
}

/**
 * One system per test file: the worker's job handlers run in the test's process (no worker
 * process to start), against a real database and the real processor.
 */
export async function startInProcessSystem(
  label: string,
  processorOptions: { refundSettleMs?: number; authorizationWindowMs?: number } = {},
): Promise<InProcessSystem> {
  const app = await createTestDatabase(label);
  await seedTenants(app.client.sql);
  const processorDb = await createProcessorTestDatabase(label);
  const processor = await startTestProcessor({ databaseUrl: processorDb.url, ...processorOptions });
  const ledgerSql = postgres(processorDb.url, { max: 1, onnotice: () => {} });
  const deps = inProcessDeps(app.client.sql, processor.url);
  return {
    app,
    processor,
    ledgerSql,
    deps,
    async runJobsOf(paymentId) {
      for (let round = 0; round < 200; round++) {
        await runDueJobsOnce(deps);
        const [left] = await app.client.sql<{ n: number }[]>`
          select count(*)::int as n from outbox_jobs
          where payment_id = ${paymentId} and status in ('pending', 'running')`;
        if (left!.n === 0) return;
        await sleep(25);
      }
      throw new Error(`jobs of ${paymentId} did not finish`);
    },
    ledgerOf: (paymentId) =>
      ledgerSql<{ kind: string; amount: number; idempotency_key: string | null }[]>`
        select kind, amount::int as amount, idempotency_key from ledger_entries
        where metadata->>'payment_id' = ${paymentId} order by seq`,
    expectInvariantHolds: () => expectConvergedInvariantHolds(app.url, processorDb.url),
    async close() {
      await ledgerSql.end();
      await processor.stop();
      await processorDb.drop();
      await app.drop();
    },
  };
}
