/** Settings of the API that come from the process environment (see README "Environment"). */
export interface ApiEnvSettings {
  /** New idempotency keys per tenant per minute; 0 = no limit. */
  maxNewKeysPerMinute: number;
  /** The processor's base URL (PROCESSOR_URL), or undefined when not configured. */
  processorUrl: string | undefined;
  /** `X-Admin-Token` of the processor's admin API (PROCESSOR_ADMIN_TOKEN). */
  processorAdminToken: string;
}

export const DEFAULT_MAX_NEW_KEYS_PER_MINUTE = 600;

/**
 * Reads `ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE` (default 600, 0 disables),
 * `PROCESSOR_URL` and `PROCESSOR_ADMIN_TOKEN` (default `once-admin`). A malformed number
 * throws at start rather than silently running without a limit.
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
  };
}
