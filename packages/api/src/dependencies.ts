import type { Database } from '@once/db';
import {
  createCommitNoticeWatch,
  createIdempotency,
  type Idempotency,
  type IdempotencyEvent,
} from '@once/idempotency';
import { type AnswerEncryption, createDrizzleStore } from '@once/idempotency/drizzle';
import { createKeyOperator, type KeyOperator } from '@once/idempotency/drizzle/operator';
import { subscribePoolNotices } from '@once/postgres';
import { DEFAULT_CHECKOUT_KEY_TTL_MS, readApiEnv } from './api-env.ts';
import { OperatorCodeThrottle } from './auth/operator-code-throttle.ts';
import { OperatorSessions } from './auth/operator-sessions.ts';
import { SessionStartLimiter, type SessionStartLimits } from './auth/session-start-limit.ts';
import { SessionTenants } from './auth/session-tenants.ts';
import { PAY_OPERATIONS } from './checkout/pay-attempt-events.ts';
import { type Clock, systemClock } from './clock.ts';
import type { Transaction } from './database.ts';
import {
  createHttpProcessorLedger,
  createHttpProcessorWebhookDeliveries,
} from './processor/http-processor-admin.ts';
import {
  type ProcessorLedger,
  type ProcessorWebhookDeliveries,
  unconfiguredProcessorLedger,
  unconfiguredProcessorWebhookDeliveries,
} from './processor/processor-admin.ts';

// A COMMIT that stopped waiting for its synchronous standby reports success with a WARNING;
// every pool of the process reports its notices here, and a request that completed its key
// meanwhile is answered idempotency_outcome_unknown, never its 2xx.
const commitNotices = createCommitNoticeWatch();
subscribePoolNotices(commitNotices.onnotice);

/** Everything the API needs from its process, built once at start. */
export interface ApiDependencies {
  db: Database;
  idempotencyEngine: Idempotency<Transaction>;
  /** The operators' key inspection and eviction (`ops.*IdempotencyKey`); same event hook as the engine. */
  keyOperator: KeyOperator;
  /** HMAC-SHA256 key of the browser session cookie (SESSION_SECRET). */
  sessionSecret: string;
  /** The tenants signed sessions name, read from the database at most once a minute each. */
  sessionTenants: SessionTenants;
  /** The server's record of operator sessions: what sign-out and a key rotation end. */
  operatorSessions: OperatorSessions;
  /** Operator-code attempts, counted per browser in PostgreSQL: 5 in any 15 minutes. */
  operatorCodeThrottle: OperatorCodeThrottle;
  clock: Clock;
  /** Accept `session.start({ demoTenantId })` (demo deployments only). */
  allowDemoLogin: boolean;
  /** The code a demo operator sign-in must give; undefined refuses demo operator sign-in. */
  operatorCode: string | undefined;
  /** Counts `session.start` per client address and per tenant; undefined: unlimited. */
  sessionStartLimiter: SessionStartLimiter | undefined;
  /** The processor's ledger, for `ops.ledger` (HTTP admin API in production). */
  processorLedger: ProcessorLedger;
  /** The processor's webhook outbox, for `ops.webhookDeliveries` and `ops.resendWebhook`. */
  processorWebhooks: ProcessorWebhookDeliveries;
  /** New idempotency keys per tenant per minute the engine accepts; 0 = no limit. */
  maxNewKeysPerMinute: number;
  /** NOTIFY the workers when an outbox job is written; false: they find it by polling. */
  outboxNotify: boolean;
}

/**
 * Per-operation idempotency policy of this API; see README "Idempotency". The checkout keys'
 * retention is `ONCE_CHECKOUT_KEY_TTL_MS`; a payment stays unique per key beyond it.
 */
function apiIdempotencyPoliciesFor(checkoutKeyTtlMs: number) {
  const checkoutKey = { ttlMs: checkoutKeyTtlMs, leaseMs: 30_000 } as const;
  return {
    // Both run in atomic mode (tRPC meta, REST route policy); the lease applies only to leased.
    [PAY_OPERATIONS.trpc]: checkoutKey,
    [PAY_OPERATIONS.rest]: checkoutKey,
    // GraphQL is leased (the response is known only after the document ran): a crash after
    // `pay` committed holds the key until the lease ends; the retry finds the payment by key.
    [PAY_OPERATIONS.graphql]: checkoutKey,
    // Processor event ids carry their policy per request (@once/api/webhooks).
  };
}

/**
 * Explicit options win over `env` (`readApiEnv`); without either there is no rate limit and
 * `ops.ledger` reports the processor unreachable, so library callers opt in.
 */
export function createApiDependencies(options: {
  db: Database;
  sessionSecret: string;
  clock?: Clock;
  allowDemoLogin?: boolean;
  /** Default `ONCE_OPERATOR_CODE` from `env`; neither: demo operator sign-in is refused. */
  operatorCode?: string;
  /** Default the `ONCE_SESSION_STARTS_*` limits from `env`; neither: no limit. */
  sessionStartLimits?: SessionStartLimits;
  onIdempotencyEvent?: (event: IdempotencyEvent) => void;
  /** Stored idempotent answers are encrypted with it (the web's ONCE_ANSWER_KEY); unset: in clear. */
  answerEncryption?: AnswerEncryption;
  env?: Record<string, string | undefined>;
  maxNewKeysPerMinute?: number;
  /** The new-key allowance's window, ms (default one minute); burst tests widen it. */
  newKeyWindowMs?: number;
  processorLedger?: ProcessorLedger;
  processorWebhooks?: ProcessorWebhookDeliveries;
  /** Default `ONCE_OUTBOX_NOTIFY` from `env`, else true. */
  outboxNotify?: boolean;
}): ApiDependencies {
  if (options.sessionSecret.length < 16) {
    throw new Error('SESSION_SECRET must be at least 16 characters');
  }
  const fromEnv = options.env ? readApiEnv(options.env) : undefined;
  const clock = options.clock ?? systemClock;
  const maxNewKeysPerMinute = wholeNumberAtLeast(
    'maxNewKeysPerMinute',
    options.maxNewKeysPerMinute ?? fromEnv?.maxNewKeysPerMinute ?? 0,
    0,
  );
  const newKeyWindowMs = wholeNumberAtLeast('newKeyWindowMs', options.newKeyWindowMs ?? 60_000, 1);
  const checkoutKeyTtlMs = fromEnv?.checkoutKeyTtlMs ?? DEFAULT_CHECKOUT_KEY_TTL_MS;
  const processorAdmin = fromEnv?.processorUrl
    ? { url: fromEnv.processorUrl, adminToken: fromEnv.processorAdminToken }
    : undefined;
  const onEvent = options.onIdempotencyEvent ? { onEvent: options.onIdempotencyEvent } : {};
  return {
    db: options.db,
    idempotencyEngine: createIdempotency({
      store: createDrizzleStore(options.db, { encryption: options.answerEncryption }),
      // A key is the merchant's, as a payment is unique per (tenant, key): a retry sent with
      // the merchant's rotated API key or a renewed session replays, not 422 "key reused".
      defaults: { keyScope: 'tenant' },
      operations: apiIdempotencyPoliciesFor(checkoutKeyTtlMs),
      unreplicatedCommits: commitNotices.unreplicatedCommits,
      // Counts NEW keys only (replays and retries of a known key are never limited), per
      // principal, on a sliding window (one minute when deployed); see packages/idempotency "Limits".
      ...(maxNewKeysPerMinute > 0
        ? { rateLimit: { maxNewKeys: maxNewKeysPerMinute, windowMs: newKeyWindowMs } }
        : {}),
      ...onEvent,
    }),
    keyOperator: createKeyOperator(options.db, {
      ...onEvent,
      encryption: options.answerEncryption,
    }),
    sessionSecret: options.sessionSecret,
    sessionTenants: new SessionTenants(options.db, clock),
    operatorSessions: new OperatorSessions(options.db, clock),
    operatorCodeThrottle: new OperatorCodeThrottle(options.db, options.sessionSecret),
    clock,
    allowDemoLogin: options.allowDemoLogin ?? false,
    operatorCode: options.operatorCode ?? fromEnv?.operatorCode,
    sessionStartLimiter: sessionStartLimiterFor(
      options.db,
      options.sessionStartLimits ??
        (fromEnv && {
          perAddress: fromEnv.sessionStartsPerAddressPerMinute,
          perTenant: fromEnv.sessionStartsPerTenantPerMinute,
        }),
    ),
    processorLedger:
      options.processorLedger ??
      (processorAdmin ? createHttpProcessorLedger(processorAdmin) : unconfiguredProcessorLedger),
    processorWebhooks:
      options.processorWebhooks ??
      (processorAdmin
        ? createHttpProcessorWebhookDeliveries(processorAdmin)
        : unconfiguredProcessorWebhookDeliveries),
    maxNewKeysPerMinute,
    outboxNotify: options.outboxNotify ?? fromEnv?.outboxNotify ?? true,
  };
}

/** `value`, refused at start unless it is a whole number >= `min`. */
function wholeNumberAtLeast(name: string, value: number, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new Error(`${name} must be a whole number >= ${min}, got ${value}`);
  }
  return value;
}

function sessionStartLimiterFor(db: Database, limits: SessionStartLimits | undefined) {
  if (!limits || (limits.perAddress === 0 && limits.perTenant === 0)) return undefined;
  return new SessionStartLimiter(db, limits);
}
