import { claimDueJobs } from '@once/db/outbox';
import type postgres from 'postgres';
import { handledJobKinds, runJob } from '../jobs/job-handlers.ts';
import type { JobDeps } from '../jobs/processor-action-job.ts';
import { createProcessorClients } from '../processor/processor-client.ts';

/** The worker's job handlers in the caller's process, over a database another harness made. */
export interface InProcessWorker {
  /** Claims and runs every due job, as the dispatcher would, until none is due. */
  runDueJobs(): Promise<void>;
}

/**
 * The worker without its process: the same claim and the same handlers, against the real
 * processor at `processorUrl`, for tests that drive the web's routes in-process and want the
 * money moved between their steps, in an order they choose.
 */
export function createInProcessWorker(options: {
  sql: postgres.Sql;
  processorUrl: string;
}): InProcessWorker {
  const deps = inProcessDeps(options.sql, options.processorUrl);
  return {
    async runDueJobs() {
      for (let round = 0; round < 50; round++) {
        if ((await runDueJobsOnce(deps)) === 0) return;
      }
      throw new Error('the in-process worker still finds due jobs after 50 rounds');
    },
  };
}

/** Claims the due jobs once and runs them, as the dispatcher would; returns how many. */
export async function runDueJobsOnce(deps: JobDeps): Promise<number> {
  const claims = await claimDueJobs(deps.sql, {
    workerId: 'w-in-process',
    leaseMs: 30_000,
    limit: 20,
    kinds: handledJobKinds,
  });
  for (const { job } of claims) await runJob(job, deps);
  return claims.length;
}

/** What the handlers run with in a test's process: short backoffs, a silent log. */
export function inProcessDeps(sql: postgres.Sql, processorUrl: string): JobDeps {
  return {
    sql,
    processorFor: createProcessorClients({ processorUrl, timeoutMs: 5_000 }),
    leaseMs: 30_000,
    backoff: { baseMs: 10, maxMs: 20 },
    log: () => {},
  };
}
