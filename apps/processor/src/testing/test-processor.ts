import {
  DEFAULT_AUTHORIZATION_WINDOW_MS,
  DEFAULT_IDEMPOTENCY_REAP_INTERVAL_MS,
  DEFAULT_IDEMPOTENCY_RETENTION_MS,
  DEFAULT_REFUND_SETTLE_MS,
} from '../config.ts';
import { type RunningProcessor, startProcessor } from '../start-processor.ts';

type TestProcessorConfig = Parameters<typeof startProcessor>[0];

/**
 * The processor in this test's process, on a free port, over `databaseUrl`, with the
 * processor tests' shared defaults: webhooks go nowhere (a closed port) and retry only after a
 * minute, 30 s idempotency lease, admin token `once-admin`, silent log. `overrides` replace any.
 */
export function startTestProcessor(
  overrides: Partial<TestProcessorConfig> & { databaseUrl: string },
): Promise<RunningProcessor> {
  return startProcessor({
    port: 0,
    webhookUrl: 'http://127.0.0.1:9/unused',
    webhookSecret: 'whsec_test',
    adminToken: 'once-admin',
    webhookBackoffMs: 60_000,
    idempotencyLeaseMs: 30_000,
    idempotencyRetentionMs: DEFAULT_IDEMPOTENCY_RETENTION_MS,
    idempotencyReapIntervalMs: DEFAULT_IDEMPOTENCY_REAP_INTERVAL_MS,
    authorizationWindowMs: DEFAULT_AUTHORIZATION_WINDOW_MS,
    refundSettleMs: DEFAULT_REFUND_SETTLE_MS,
    publicUrl: undefined,
    log: () => {},
    ...overrides,
  });
}
