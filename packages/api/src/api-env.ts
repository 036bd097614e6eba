/** Settings of the API that come from the process environment (see README "Environment"). */
export interface ApiEnvSettings {
  /** New idempotency keys per tenant per minute; 0 = no limit. */
  maxNewKeysPerMinute: number;
  /** The processor's base URL (PROCESSOR_URL), or undefined when not configured. */
  processorUrl: string | undefined;
  /** `X-Admin-Token` of the processor's admin API (PROCESSOR_ADMIN_TOKEN). */
  processorAdminToken: string;
  /** Retention of a checkout idempotency key, ms (ONCE_CHECKOUT_KEY_TTL_MS). */
  checkoutKeyTtlMs: number;
}

/** 24 h, as Stripe keeps keys. A payment stays unique per key beyond it (see `pay`). */
export const DEFAULT_CHECKOUT_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/** `ONCE_CHECKOUT_KEY_TTL_MS`: a whole number of milliseconds >= 1, default 24 h. */
function readCheckoutKeyTtlMs(env: Record<string, string | undefined>): number {
  const raw = env.ONCE_CHECKOUT_KEY_TTL_MS?.trim();
  if (!raw) return DEFAULT_CHECKOUT_KEY_TTL_MS;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
    throw new Error(
      `ONCE_CHECKOUT_KEY_TTL_MS must be a whole number of milliseconds >= 1 (default 86400000), got "${raw}"`,
    );
  }
  return Number(raw);
}

export const DEFAULT_MAX_NEW_KEYS_PER_MINUTE = 600;

/**
 * Reads `ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE` (default 600, 0 disables),
 * `PROCESSOR_URL`, `PROCESSOR_ADMIN_TOKEN` (default `once-admin`) and
 * `ONCE_CHECKOUT_KEY_TTL_MS` (default 24 h). A malformed number throws at start rather than
 * silently running without a limit.
 *
 * @example
 * readApiEnv({ ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '0' }).maxNewKeysPerMinute; // 0
 */
export function readApiEnv(env: Record<string, string | undefined>): ApiEnvSettings {
  const raw = env.ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE?.trim();
  let maxNewKeysPerMinute = DEFAULT_MAX_NEW_KEYS_PER_MINUTE;
  if (raw) {
    if (!/^\d+$/.test(raw)) {
      throw new Error(
        `ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE must be a whole number >= 0 (0 disables), got "${raw}"`,
      );
    }
    maxNewKeysPerMinute = Number(raw);
  }
  return {
    maxNewKeysPerMinute,
    processorUrl: env.PROCESSOR_URL?.trim() || undefined,
    processorAdminToken: env.PROCESSOR_ADMIN_TOKEN?.trim() || 'once-admin',
    checkoutKeyTtlMs: readCheckoutKeyTtlMs(env),
  };
}
