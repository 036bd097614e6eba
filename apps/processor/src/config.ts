import { readBindHost } from './bind-host.ts';

/** Stripe keeps an Idempotency-Key for 24 hours. */
export const DEFAULT_IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_IDEMPOTENCY_REAP_INTERVAL_MS = 10 * 60_000;

/** The processor's settings, read once from the environment (team process contract). */
export interface ProcessorConfig {
  /** Address to listen on (`HOST`, default 0.0.0.0: reachable from other containers). */
  host: string;
  port: number;
  databaseUrl: string;
  webhookUrl: string;
  webhookSecret: string;
  adminToken: string;
  /** First webhook retry delay (doubles per attempt). */
  webhookBackoffMs: number;
  /** Idempotency-key lease (renewed while a request runs); after a crash, retries wait this long. */
  idempotencyLeaseMs: number;
  /** How long an Idempotency-Key is remembered (Stripe: 24 h); after it, a reuse runs anew. */
  idempotencyRetentionMs?: number;
  /** How often keys past their retention are deleted. */
  idempotencyReapIntervalMs?: number;
}

/**
 * @example
 * const config = readProcessorConfig(process.env);
 */
export function readProcessorConfig(env: NodeJS.ProcessEnv): ProcessorConfig {
  const databaseUrl = env.PROCESSOR_DATABASE_URL;
  if (!databaseUrl) {
    throw new Error(
      "PROCESSOR_DATABASE_URL is not set: point it at the processor's own database (`once_processor` in the demo cluster).",
    );
  }
  const int = (name: string, fallback: number, min: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) {
      throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
    }
    return value;
  };
  const config: ProcessorConfig = {
    host: readBindHost(env, 'HOST'),
    port: Number(env.PORT ?? 4100),
    databaseUrl,
    webhookUrl: env.PROCESSOR_WEBHOOK_URL ?? 'http://127.0.0.1:3000/api/webhooks/processor',
    webhookSecret: env.PROCESSOR_WEBHOOK_SECRET ?? 'whsec_once_demo',
    adminToken: env.PROCESSOR_ADMIN_TOKEN ?? 'once-admin',
    webhookBackoffMs: int('PROCESSOR_WEBHOOK_BACKOFF_MS', 1_000, 1),
    idempotencyLeaseMs: int('PROCESSOR_IDEMPOTENCY_LEASE_MS', 30_000, 100),
    idempotencyRetentionMs: int(
      'PROCESSOR_IDEMPOTENCY_RETENTION_MS',
      DEFAULT_IDEMPOTENCY_RETENTION_MS,
      1,
    ),
    idempotencyReapIntervalMs: int(
      'PROCESSOR_IDEMPOTENCY_REAP_INTERVAL_MS',
      DEFAULT_IDEMPOTENCY_REAP_INTERVAL_MS,
      10,
    ),
  };
  checkProcessorWindows(config);
  return config;
}

/**
 * The inequalities between the processor's own windows (docs/decisions/0008-time-windows.md).
 * A key retained for less than its lease would be forgotten while its request still runs,
 * so a retry arriving then would run the request a second time.
 */
export function checkProcessorWindows(config: ProcessorConfig): void {
  const retentionMs = config.idempotencyRetentionMs ?? DEFAULT_IDEMPOTENCY_RETENTION_MS;
  if (retentionMs <= config.idempotencyLeaseMs) {
    throw new Error(
      `PROCESSOR_IDEMPOTENCY_RETENTION_MS (${retentionMs}) must be greater than PROCESSOR_IDEMPOTENCY_LEASE_MS (${config.idempotencyLeaseMs}): a key must outlive the request that holds it.`,
    );
  }
}
