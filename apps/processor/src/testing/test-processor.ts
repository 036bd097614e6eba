import { readProcessorConfig } from '../config.ts';
import { type RunningProcessor, startProcessor } from '../start-processor.ts';

type TestProcessorConfig = Parameters<typeof startProcessor>[0];

/**
 * The processor in this test's process, on a free port of 127.0.0.1, over `databaseUrl`, with
 * the processor tests' shared settings (else the defaults): webhooks go nowhere (a closed
 * port) and retry only after a minute, admin token `once-admin`, silent log. `overrides`
 * replace any.
 */
export function startTestProcessor(
  overrides: Partial<TestProcessorConfig> & { databaseUrl: string },
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
