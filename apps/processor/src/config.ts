import {
  bindHost,
  databaseFields,
  databaseSettings,
  integer,
  parseEnv,
  required,
  text,
} from '@once/env';

/** The processor's settings, read once from the environment (docs/process-contract.md). */
export type ProcessorConfig = ReturnType<typeof readProcessorConfig>;

/** Validated at start; the two secrets have no default (a start without them is refused). */
const processorEnv = {
  HOST: bindHost(),
  PORT: integer({ default: 4100, min: 0, max: 65_535 }),
  ...databaseFields(
    'PROCESSOR_',
    "PROCESSOR_DATABASE_URL is not set: point it at the processor's own database (`once_processor` in the demo cluster).",
  ),
  PROCESSOR_WEBHOOK_URL: text({ default: 'http://127.0.0.1:3000/api/webhooks/processor' }),
  PROCESSOR_WEBHOOK_SECRET: required(
    "PROCESSOR_WEBHOOK_SECRET is not set: set the secret webhooks are signed with (the same value as the web app's; `npm run demo` sets one).",
  ),
  PROCESSOR_ADMIN_TOKEN: required(
    'PROCESSOR_ADMIN_TOKEN is not set: set the token the admin API requires (`npm run demo` sets one).',
  ),
  PROCESSOR_WEBHOOK_BACKOFF_MS: integer({ default: 1_000, min: 1 }),
  PROCESSOR_IDEMPOTENCY_LEASE_MS: integer({ default: 30_000, min: 100 }),
  // Stripe keeps an Idempotency-Key for 24 hours.
  PROCESSOR_IDEMPOTENCY_RETENTION_MS: integer({ default: 24 * 60 * 60_000, min: 1 }),
  PROCESSOR_IDEMPOTENCY_REAP_INTERVAL_MS: integer({ default: 10 * 60_000, min: 10 }),
  // Stripe cancels an uncaptured card authorisation 7 days after it was made.
  PROCESSOR_AUTHORIZATION_WINDOW_MS: integer({ default: 7 * 24 * 60 * 60_000, min: 100 }),
  // Stripe says only "some time later"; long enough for a client to see the first status.
  PROCESSOR_REFUND_SETTLE_MS: integer({ default: 10_000, min: 100 }),
  PROCESSOR_PUBLIC_URL: text({ default: undefined, trim: true }),
};

/**
 * The processor's settings, with the inequality between its own windows checked
 * (docs/decisions/0008-time-windows.md): a key retained for less than its lease would be
 * forgotten while its request still runs, so a retry arriving then would run it a second time.
 */
export function readProcessorConfig(env: NodeJS.ProcessEnv) {
  const e = parseEnv(processorEnv, env);
  if (e.PROCESSOR_IDEMPOTENCY_RETENTION_MS <= e.PROCESSOR_IDEMPOTENCY_LEASE_MS) {
    throw new Error(
      `PROCESSOR_IDEMPOTENCY_RETENTION_MS (${e.PROCESSOR_IDEMPOTENCY_RETENTION_MS}) must be greater than PROCESSOR_IDEMPOTENCY_LEASE_MS (${e.PROCESSOR_IDEMPOTENCY_LEASE_MS}): a key must outlive the request that holds it.`,
    );
  }
  return {
    host: e.HOST,
    port: e.PORT,
    ...databaseSettings(e, 'PROCESSOR_', "migrations and the webhook deliverer's LISTEN"),
    webhookUrl: e.PROCESSOR_WEBHOOK_URL,
    webhookSecret: e.PROCESSOR_WEBHOOK_SECRET,
    adminToken: e.PROCESSOR_ADMIN_TOKEN,
    /** First webhook retry delay (doubles per attempt). */
    webhookBackoffMs: e.PROCESSOR_WEBHOOK_BACKOFF_MS,
    /** Renewed while a request runs; after a crash, retries wait this long. */
    idempotencyLeaseMs: e.PROCESSOR_IDEMPOTENCY_LEASE_MS,
    idempotencyRetentionMs: e.PROCESSOR_IDEMPOTENCY_RETENTION_MS,
    idempotencyReapIntervalMs: e.PROCESSOR_IDEMPOTENCY_REAP_INTERVAL_MS,
    authorizationWindowMs: e.PROCESSOR_AUTHORIZATION_WINDOW_MS,
    /** When an asynchronous test-card refund changes status. */
    refundSettleMs: e.PROCESSOR_REFUND_SETTLE_MS,
    /** Where shoppers' browsers reach the challenge page; unset: the confirming client's origin. */
    publicUrl: e.PROCESSOR_PUBLIC_URL,
  };
}
