import type { Database } from '@once/db';
import { createIdempotency, type Idempotency, type IdempotencyEvent } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { type Clock, systemClock } from './clock.ts';
import type { Transaction } from './database.ts';

/** Everything the API needs from its process, built once at start. */
export interface ApiDependencies {
  db: Database;
  idempotencyEngine: Idempotency<Transaction>;
  /** HMAC-SHA256 key of the browser session cookie (SESSION_SECRET). */
  sessionSecret: string;
  clock: Clock;
  /** Accept `session.start({ demoTenantId })` (demo deployments only). */
  allowDemoLogin: boolean;
}

/** Per-operation idempotency policy of this API; see README "Idempotency". */
export const apiIdempotencyPolicies = {
  // DB-only handler: a 30 s lease is far longer than the transaction needs.
  'checkout.pay': { ttlMs: 24 * 60 * 60 * 1000, leaseMs: 30_000 },
  'payments.create': { ttlMs: 24 * 60 * 60 * 1000, leaseMs: 30_000 },
  // Processor retries webhooks for days; keep the event ids a week.
  'webhooks.processor': { ttlMs: 7 * 24 * 60 * 60 * 1000, leaseMs: 30_000 },
};

/**
 * Builds the API's dependencies over one database client.
 *
 * @example
 * const deps = createApiDependencies({ db, sessionSecret: process.env.SESSION_SECRET! });
 */
export function createApiDependencies(options: {
  db: Database;
  sessionSecret: string;
  clock?: Clock;
  allowDemoLogin?: boolean;
  onIdempotencyEvent?: (event: IdempotencyEvent) => void;
}): ApiDependencies {
  if (options.sessionSecret.length < 16) {
    throw new Error('SESSION_SECRET must be at least 16 characters');
  }
  return {
    db: options.db,
    idempotencyEngine: createIdempotency({
      store: createDrizzleStore(options.db),
      operations: apiIdempotencyPolicies,
      ...(options.onIdempotencyEvent ? { onEvent: options.onIdempotencyEvent } : {}),
    }),
    sessionSecret: options.sessionSecret,
    clock: options.clock ?? systemClock,
    allowDemoLogin: options.allowDemoLogin ?? false,
  };
}
