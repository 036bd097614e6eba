import type { Database } from '@once/db';
import { createIdempotency, type Idempotency, type IdempotencyEvent } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { readApiEnv } from './api-env.ts';
import { type Clock, systemClock } from './clock.ts';
import type { Transaction } from './database.ts';
import { createHttpProcessorLedger } from './processor/http-processor-ledger.ts';
import { type ProcessorLedger, unconfiguredProcessorLedger } from './processor/processor-ledger.ts';

/** Everything the API needs from its process, built once at start. */
export interface ApiDependencies {
  db: Database;
  idempotencyEngine: Idempotency<Transaction>;
  /** HMAC-SHA256 key of the browser session cookie (SESSION_SECRET). */
  sessionSecret: string;
  clock: Clock;
  /** Accept `session.start({ demoTenantId })` (demo deployments only). */
  allowDemoLogin: boolean;
  /** The processor's ledger, for `ops.ledger` (HTTP admin API in production). */
  processorLedger: ProcessorLedger;
  /** New idempotency keys per tenant per minute the engine accepts; 0 = no limit. */
  maxNewKeysPerMinute: number;
}

/** Per-operation idempotency policy of this API; see README "Idempotency". */
export const apiIdempotencyPolicies = {
  // DB-only handlers in one transaction: both run in atomic mode (set by the tRPC meta and the
  // REST route's policy), so the lease below only applies if one is switched back to leased.
  'checkout.pay': { ttlMs: 24 * 60 * 60 * 1000, leaseMs: 30_000 },
  'payments.create': { ttlMs: 24 * 60 * 60 * 1000, leaseMs: 30_000 },
  // Processor retries webhooks for days; keep the event ids a week.
  'webhooks.processor': { ttlMs: 7 * 24 * 60 * 60 * 1000, leaseMs: 30_000 },
};

/**
 * Builds the API's dependencies over one database client.
 *
 * With `env` (the web app passes `process.env`), the new-key rate limit and the processor's
 * admin API come from `ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE` (default 600, 0 = off),
 * `PROCESSOR_URL` and `PROCESSOR_ADMIN_TOKEN` (see `readApiEnv`). Explicit options win over
 * `env`. Without either, there is no rate limit and `ops.ledger` reports the processor as
 * unreachable: library callers (tests, the benchmark server) opt in.
 *
 * @example
 * const deps = createApiDependencies({ db, sessionSecret: process.env.SESSION_SECRET!, env: process.env });
 */
export function createApiDependencies(options: {
  db: Database;
  sessionSecret: string;
  clock?: Clock;
  allowDemoLogin?: boolean;
  onIdempotencyEvent?: (event: IdempotencyEvent) => void;
  env?: Record<string, string | undefined>;
  maxNewKeysPerMinute?: number;
  processorLedger?: ProcessorLedger;
}): ApiDependencies {
  if (options.sessionSecret.length < 16) {
    throw new Error('SESSION_SECRET must be at least 16 characters');
  }
  const fromEnv = options.env ? readApiEnv(options.env) : undefined;
  const maxNewKeysPerMinute = options.maxNewKeysPerMinute ?? fromEnv?.maxNewKeysPerMinute ?? 0;
  if (!Number.isInteger(maxNewKeysPerMinute) || maxNewKeysPerMinute < 0) {
    throw new Error(`maxNewKeysPerMinute must be a whole number >= 0, got ${maxNewKeysPerMinute}`);
  }
  const processorLedger =
    options.processorLedger ??
    (fromEnv?.processorUrl
      ? createHttpProcessorLedger({
          url: fromEnv.processorUrl,
          adminToken: fromEnv.processorAdminToken,
        })
      : unconfiguredProcessorLedger);
  return {
    db: options.db,
    idempotencyEngine: createIdempotency({
      store: createDrizzleStore(options.db),
      operations: apiIdempotencyPolicies,
      // Counts NEW keys only (replays and retries of a known key are never limited), per
      // tenant, over a fixed one-minute window; see packages/idempotency "Limits".
      ...(maxNewKeysPerMinute > 0
        ? { rateLimit: { maxNewKeys: maxNewKeysPerMinute, windowMs: 60_000 } }
        : {}),
      ...(options.onIdempotencyEvent ? { onEvent: options.onIdempotencyEvent } : {}),
    }),
    sessionSecret: options.sessionSecret,
    clock: options.clock ?? systemClock,
    allowDemoLogin: options.allowDemoLogin ?? false,
    processorLedger,
    maxNewKeysPerMinute,
  };
}
