import { hostname } from 'node:os';
import { readAnswerEncryption } from '@once/api';
import { bindHost, databaseFields, databaseSettings, integer, parseEnv, text } from '@once/env';

/** Validated at start: an invalid number fails with the variable's name, not later as a NaN timeout. */
const workerEnv = {
  ...databaseFields(
    '',
    'DATABASE_URL is not set. Start the system with `npm run demo` (it starts an embedded ' +
      'PostgreSQL) or set DATABASE_URL to your own PostgreSQL.',
  ),
  PROCESSOR_URL: text({ default: 'http://127.0.0.1:4100' }),
  // Where shoppers' browsers reach the web app (the default port of `next start`).
  WEB_PUBLIC_URL: text({ default: 'http://127.0.0.1:3000', trim: true }),
  WORKER_CHALLENGE_ABANDON_MS: integer({ default: 15 * 60_000, min: 100 }),
  WORKER_HEALTH_PORT: integer({ default: 4200 }),
  WORKER_HEALTH_HOST: bindHost(),
  WORKER_ID: text({ default: undefined }),
  WORKER_CONCURRENCY: integer({ default: 4, min: 1 }),
  WORKER_LEASE_MS: integer({ default: 30_000, min: 100 }),
  WORKER_PROCESSOR_TIMEOUT_MS: integer({ default: 10_000, min: 1 }),
  WORKER_POLL_INTERVAL_MS: integer({ default: 2_000, min: 10 }),
  ONCE_OUTBOX_NOTIFY: integer({ default: 1, min: 0, max: 1 }),
  WORKER_BACKOFF_BASE_MS: integer({ default: 500, min: 1 }),
  WORKER_BACKOFF_MAX_MS: integer({ default: 30_000, min: 1 }),
  WORKER_RECONCILE_INTERVAL_MS: integer({ default: 10_000, min: 10 }),
  WORKER_RECONCILE_AFTER_MS: integer({ default: 60_000 }),
  WORKER_RECONCILE_MAX_REQUEUES: integer({ default: 3 }),
  WORKER_RECONCILE_BACKOFF_BASE_MS: integer({ default: 60_000, min: 1 }),
  WORKER_RECONCILE_BACKOFF_MAX_MS: integer({ default: 60 * 60_000, min: 1 }),
  WORKER_RECONCILE_STUCK_AFTER_CHECKS: integer({ default: 5, min: 1 }),
  WORKER_WEBHOOK_BACKFILL_INTERVAL_MS: integer({ default: 60_000, min: 10 }),
  WORKER_REAP_INTERVAL_MS: integer({ default: 60_000, min: 10 }),
  WORKER_SWEEP_INTERVAL_MS: integer({ default: 5_000, min: 10 }),
  WORKER_SHUTDOWN_GRACE_MS: integer({ default: 4_000 }),
};

/**
 * Everything the worker reads from its environment, with the defaults applied, and the
 * windows it can check itself (docs/decisions/0008-time-windows.md) checked: a broken one
 * throws with the variables' names and values. The lease is deliberately not tied to the
 * processor timeout: it is renewed every third of itself while a call runs, and the two-step
 * charge keeps a job run twice at once to one charge, so a short lease costs work, never money.
 */
export function readWorkerConfig(env: NodeJS.ProcessEnv = process.env) {
  const e = parseEnv(workerEnv, env);
  mustNotExceed(e, 'WORKER_BACKOFF_BASE_MS', 'WORKER_BACKOFF_MAX_MS');
  mustNotExceed(e, 'WORKER_RECONCILE_BACKOFF_BASE_MS', 'WORKER_RECONCILE_BACKOFF_MAX_MS');
  const needs = e.ONCE_OUTBOX_NOTIFY === 1 ? 'migrations and the outbox LISTEN' : 'migrations';
  return {
    ...databaseSettings(e, '', needs),
    processorUrl: e.PROCESSOR_URL,
    /** The web's answer keys: the webhook backfill replays what the web's deliveries stored. */
    answerEncryption: readAnswerEncryption(env),
    /** The web app's return page for 3-D Secure: the confirm's `return_url`. */
    checkoutReturnUrl: checkoutReturnUrlOf(e.WEB_PUBLIC_URL),
    challengeAbandonAfterMs: e.WORKER_CHALLENGE_ABANDON_MS,
    /** 0 disables the health server. */
    healthPort: e.WORKER_HEALTH_PORT,
    healthHost: e.WORKER_HEALTH_HOST,
    workerId: e.WORKER_ID ?? `worker-${hostname()}-${process.pid}`,
    concurrency: e.WORKER_CONCURRENCY,
    leaseMs: e.WORKER_LEASE_MS,
    processorTimeoutMs: e.WORKER_PROCESSOR_TIMEOUT_MS,
    pollIntervalMs: e.WORKER_POLL_INTERVAL_MS,
    /** NOTIFY/LISTEN wake-ups on; false: polling only. */
    outboxNotify: e.ONCE_OUTBOX_NOTIFY === 1,
    backoffBaseMs: e.WORKER_BACKOFF_BASE_MS,
    backoffMaxMs: e.WORKER_BACKOFF_MAX_MS,
    reconcileIntervalMs: e.WORKER_RECONCILE_INTERVAL_MS,
    reconcileAfterMs: e.WORKER_RECONCILE_AFTER_MS,
    reconcileMaxRequeues: e.WORKER_RECONCILE_MAX_REQUEUES,
    reconcileBackoffBaseMs: e.WORKER_RECONCILE_BACKOFF_BASE_MS,
    reconcileBackoffMaxMs: e.WORKER_RECONCILE_BACKOFF_MAX_MS,
    reconcileStuckAfterChecks: e.WORKER_RECONCILE_STUCK_AFTER_CHECKS,
    webhookBackfillIntervalMs: e.WORKER_WEBHOOK_BACKFILL_INTERVAL_MS,
    reapIntervalMs: e.WORKER_REAP_INTERVAL_MS,
    sweepIntervalMs: e.WORKER_SWEEP_INTERVAL_MS,
    shutdownGraceMs: e.WORKER_SHUTDOWN_GRACE_MS,
  };
}

/** Refuses a backoff whose base exceeds its cap, naming both variables. */
function mustNotExceed(e: Record<string, unknown>, base: string, max: string): void {
  if (Number(e[base]) > Number(e[max])) {
    throw new Error(`${base} (${e[base]}) must not exceed ${max} (${e[max]})`);
  }
}

/**
 * The return page under the web app's public address. Refused at start unless it is an
 * absolute http(s) URL without a query or fragment: the processor refuses any other
 * `return_url`, and every 3-D Secure checkout would then fail at its confirm.
 *
 * @example
 * checkoutReturnUrlOf('https://shop.example'); // 'https://shop.example/checkout/return'
 */
function checkoutReturnUrlOf(webPublicUrl: string): string {
  const url = URL.canParse(webPublicUrl) ? new URL(webPublicUrl) : undefined;
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.search || url.hash) {
    throw new Error(
      `WEB_PUBLIC_URL must be the web app's absolute http(s) address as browsers reach it, without a query, got ${JSON.stringify(webPublicUrl)}`,
    );
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}/checkout/return`;
}
