import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnTestProcess } from '@once/processor/testing';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));

export type RunningProcess = ReturnType<typeof spawnTestProcess>;

/** Starts `script` (from the repository root) as a real OS process in its own process group. */
export function startProcess(
  script: string,
  env: Record<string, string>,
  name: string,
): RunningProcess {
  return spawnTestProcess(path.join(repoRoot, script), { cwd: repoRoot, env, name });
}

/** Short leases, backoffs and reconcile delays so chaos tests converge in seconds. */
const FAST_WORKER_ENV = {
  WORKER_HEALTH_PORT: '0',
  WORKER_LEASE_MS: '2000',
  WORKER_PROCESSOR_TIMEOUT_MS: '1500',
  WORKER_POLL_INTERVAL_MS: '500',
  WORKER_BACKOFF_BASE_MS: '100',
  WORKER_BACKOFF_MAX_MS: '800',
  WORKER_RECONCILE_INTERVAL_MS: '500',
  WORKER_RECONCILE_AFTER_MS: '500',
  // No web receives the processor's webhooks here, so a fast backfill would settle payments
  // behind the worker's back and race the protocol these tests tell step by step; the
  // backfill has its own tests (backfill-webhook-events.test.ts).
  WORKER_WEBHOOK_BACKFILL_INTERVAL_MS: '600000',
  WORKER_SWEEP_INTERVAL_MS: '1000',
  WORKER_REAP_INTERVAL_MS: '5000',
};

export async function startWorkerProcess(
  env: Record<string, string>,
  workerId: string,
): Promise<RunningProcess> {
  const worker = startProcess(
    'apps/worker/src/runtime/main.ts',
    { ...FAST_WORKER_ENV, WORKER_ID: workerId, ...env },
    workerId,
  );
  await worker.waitForLine(/worker\.started/, 60_000);
  return worker;
}
