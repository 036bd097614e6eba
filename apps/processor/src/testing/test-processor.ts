import { readProcessorConfig } from '../config.ts';
import { type RunningProcessor, startProcessor } from '../start-processor.ts';

/**
 * The processor in this test's process, on a free port of 127.0.0.1, over `databaseUrl`: webhooks
 * go nowhere (a closed port) and retry after a minute, admin token `once-admin`, silent log,
 * else the defaults; `overrides` replace any.
 */
export function startTestProcessor(
  overrides: Partial<Parameters<typeof startProcessor>[0]> & { databaseUrl: string },
): Promise<RunningProcessor> {
  const settings = readProcessorConfig({
    PROCESSOR_DATABASE_URL: overrides.databaseUrl,
    PROCESSOR_WEBHOOK_URL: 'http://127.0.0.1:9/unused',
    PROCESSOR_WEBHOOK_SECRET: 'whsec_test',
    PROCESSOR_ADMIN_TOKEN: 'once-admin',
    PROCESSOR_WEBHOOK_BACKOFF_MS: '60000',
  });
  return startProcessor({ ...settings, host: '127.0.0.1', port: 0, log: () => {}, ...overrides });
}
