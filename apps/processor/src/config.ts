import { readBindHost } from './bind-host.ts';

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
  return {
    host: readBindHost(env, 'HOST'),
    port: Number(env.PORT ?? 4100),
    databaseUrl,
    webhookUrl: env.PROCESSOR_WEBHOOK_URL ?? 'http://127.0.0.1:3000/api/webhooks/processor',
    webhookSecret: env.PROCESSOR_WEBHOOK_SECRET ?? 'whsec_once_demo',
    adminToken: env.PROCESSOR_ADMIN_TOKEN ?? 'once-admin',
    webhookBackoffMs: Number(env.PROCESSOR_WEBHOOK_BACKOFF_MS ?? 1_000),
    idempotencyLeaseMs: Number(env.PROCESSOR_IDEMPOTENCY_LEASE_MS ?? 30_000),
  };
}
