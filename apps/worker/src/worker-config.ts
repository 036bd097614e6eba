import { hostname } from 'node:os';
import { requireDatabaseUrl } from '@once/db';
import { readBindHost } from './bind-host.ts';

/** Everything the worker reads from its environment, with the defaults applied. */
export interface WorkerConfig {
  databaseUrl: string;
  processorUrl: string;
  /** 0 disables the health server. */
  healthPort: number;
  /** Address the health server listens on (WORKER_HEALTH_HOST, default 0.0.0.0). */
  healthHost: string;
  workerId: string;
  concurrency: number;
  leaseMs: number;
  processorTimeoutMs: number;
  pollIntervalMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  reconcileIntervalMs: number;
  /** A payment must be `unknown`/`processing` this long (with no live job) to be reconciled. */
  reconcileAfterMs: number;
  /** Re-enqueues of a charge the processor has no trace of, before the payment is `failed`. */
  reconcileMaxRequeues: number;
  /** Next check of a payment the reconciler could not decide: backoff from base to cap. */
  reconcileBackoffBaseMs: number;
  reconcileBackoffMaxMs: number;
  /** Undecided this many checks = stuck (counted in /healthz and logged). */
  reconcileStuckAfterChecks: number;
  reapIntervalMs: number;
  sweepIntervalMs: number;
  shutdownGraceMs: number;
}

/**
 * Reads the worker's environment (see README for the table). Invalid numbers fail at start
 * with the variable's name, not later as NaN timeouts.
 *
 * @example
 * const config = readWorkerConfig({ DATABASE_URL: 'postgres://...', WORKER_LEASE_MS: '2000' });
 */
export function readWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const int = (name: string, fallback: number, min = 0): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) {
      throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
    }
    return value;
  };
  const config: WorkerConfig = {
    databaseUrl: requireDatabaseUrl(env),
    processorUrl: env.PROCESSOR_URL || 'http://127.0.0.1:4100',
    healthPort: int('WORKER_HEALTH_PORT', 4200),
    healthHost: readBindHost(env, 'WORKER_HEALTH_HOST'),
    workerId: env.WORKER_ID || `worker-${hostname()}-${process.pid}`,
    concurrency: int('WORKER_CONCURRENCY', 4, 1),
    leaseMs: int('WORKER_LEASE_MS', 30_000, 100),
    processorTimeoutMs: int('WORKER_PROCESSOR_TIMEOUT_MS', 10_000, 1),
    pollIntervalMs: int('WORKER_POLL_INTERVAL_MS', 2_000, 10),
    backoffBaseMs: int('WORKER_BACKOFF_BASE_MS', 500, 1),
    backoffMaxMs: int('WORKER_BACKOFF_MAX_MS', 30_000, 1),
    reconcileIntervalMs: int('WORKER_RECONCILE_INTERVAL_MS', 10_000, 10),
    reconcileAfterMs: int('WORKER_RECONCILE_AFTER_MS', 60_000),
    reconcileMaxRequeues: int('WORKER_RECONCILE_MAX_REQUEUES', 3),
    reconcileBackoffBaseMs: int('WORKER_RECONCILE_BACKOFF_BASE_MS', 60_000, 1),
    reconcileBackoffMaxMs: int('WORKER_RECONCILE_BACKOFF_MAX_MS', 60 * 60_000, 1),
    reconcileStuckAfterChecks: int('WORKER_RECONCILE_STUCK_AFTER_CHECKS', 5, 1),
    reapIntervalMs: int('WORKER_REAP_INTERVAL_MS', 60_000, 10),
    sweepIntervalMs: int('WORKER_SWEEP_INTERVAL_MS', 5_000, 10),
    shutdownGraceMs: int('WORKER_SHUTDOWN_GRACE_MS', 4_000),
  };
  checkWorkerWindows(config);
  return config;
}

/**
 * The inequalities between the worker's windows that it can check itself
 * (docs/decisions/0008-time-windows.md). Throws with the variables' names and values.
 * The lease is deliberately not tied to the processor timeout: it is renewed every third
 * of itself while a call runs, and the two-step charge keeps a job run twice at once to
 * one charge, so a short lease costs work, never money.
 *
 * @example
 * checkWorkerWindows({ ...config, backoffBaseMs: 60_000, backoffMaxMs: 1_000 }); // throws
 */
export function checkWorkerWindows(config: WorkerConfig): void {
  const rules: [boolean, string][] = [
    [
      config.backoffBaseMs <= config.backoffMaxMs,
      `WORKER_BACKOFF_BASE_MS (${config.backoffBaseMs}) must not exceed WORKER_BACKOFF_MAX_MS (${config.backoffMaxMs})`,
    ],
    [
      config.reconcileBackoffBaseMs <= config.reconcileBackoffMaxMs,
      `WORKER_RECONCILE_BACKOFF_BASE_MS (${config.reconcileBackoffBaseMs}) must not exceed WORKER_RECONCILE_BACKOFF_MAX_MS (${config.reconcileBackoffMaxMs})`,
    ],
  ];
  const broken = rules.find(([holds]) => !holds);
  if (broken) throw new Error(broken[1]);
}
