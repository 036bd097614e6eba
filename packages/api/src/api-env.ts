import { parseEnv, text, wholeNumber } from '@once/env';
import { MIN_OPERATOR_CODE_LENGTH } from './auth/operator-code.ts';

/** 24 h, as Stripe keeps keys. A payment stays unique per key beyond it (see `pay`). */
export const DEFAULT_CHECKOUT_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/** The API's environment, validated at start (unset or empty takes the default). */
const apiEnv = {
  ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: wholeNumber({
    default: 600,
    min: 0,
    describe: 'a whole number >= 0 (0 disables)',
  }),
  PROCESSOR_URL: text({ default: undefined, trim: true }),
  PROCESSOR_ADMIN_TOKEN: text({ default: undefined, trim: true }),
  ONCE_CHECKOUT_KEY_TTL_MS: wholeNumber({
    default: DEFAULT_CHECKOUT_KEY_TTL_MS,
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    describe: 'a whole number of milliseconds >= 1 (default 86400000)',
  }),
  // 0: the workers poll only, for engines and poolers without LISTEN/NOTIFY (CockroachDB,
  // PgBouncer in transaction mode).
  ONCE_OUTBOX_NOTIFY: wholeNumber({
    default: 1,
    min: 0,
    max: 1,
    describe: '1 (NOTIFY the workers, the default) or 0 (they poll)',
  }),
  ONCE_OPERATOR_CODE: text({ default: undefined, trim: true }),
  // Room for a presenter's tabs and a test suite's browsers on one address, far below what a
  // script needs to mint sessions or guess a code.
  ONCE_SESSION_STARTS_PER_ADDRESS_PER_MINUTE: wholeNumber({
    default: 60,
    min: 0,
    describe: 'a whole number >= 0 (0 disables)',
  }),
  // A ceiling no spread of addresses passes; far above a demo merchant's real sign-ins.
  ONCE_SESSION_STARTS_PER_TENANT_PER_MINUTE: wholeNumber({
    default: 600,
    min: 0,
    describe: 'a whole number >= 0 (0 disables)',
  }),
};

/**
 * The API's settings from the process environment (see README "Environment"); a malformed
 * value throws at start rather than silently running without a limit.
 */
export function readApiEnv(env: Record<string, string | undefined>) {
  const e = parseEnv(apiEnv, env);
  if (e.PROCESSOR_URL && !e.PROCESSOR_ADMIN_TOKEN) {
    throw new Error(
      "PROCESSOR_ADMIN_TOKEN is not set: PROCESSOR_URL is, and the operator ledger reads the processor's admin API with this token (`npm run demo` sets one).",
    );
  }
  if (
    e.ONCE_OPERATOR_CODE !== undefined &&
    e.ONCE_OPERATOR_CODE.length < MIN_OPERATOR_CODE_LENGTH
  ) {
    throw new Error(
      `ONCE_OPERATOR_CODE must be at least ${MIN_OPERATOR_CODE_LENGTH} characters (\`npm run demo\` makes a random one); unset it to refuse demo operator sign-in.`,
    );
  }
  return {
    maxNewKeysPerMinute: e.ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE,
    processorUrl: e.PROCESSOR_URL,
    processorAdminToken: e.PROCESSOR_ADMIN_TOKEN ?? '',
    checkoutKeyTtlMs: e.ONCE_CHECKOUT_KEY_TTL_MS,
    outboxNotify: e.ONCE_OUTBOX_NOTIFY === 1,
    operatorCode: e.ONCE_OPERATOR_CODE || undefined,
    sessionStartsPerAddressPerMinute: e.ONCE_SESSION_STARTS_PER_ADDRESS_PER_MINUTE,
    sessionStartsPerTenantPerMinute: e.ONCE_SESSION_STARTS_PER_TENANT_PER_MINUTE,
  };
}
