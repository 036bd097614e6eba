import {
  adminClient,
  createProcessorTestDatabase,
  type SpawnedProcessor,
  spawnProcessor,
} from '@once/processor/testing';
import postgres from 'postgres';

export interface ProcessorUnderTest extends SpawnedProcessor {
  /** The processor's own database (it migrates itself at start). */
  database: { url: string; drop(): Promise<void> };
  /** A small pool on that database, to read the ledger. */
  sql: postgres.Sql;
  /** Arms a fault on acct_tenant_a's POST /v1/payment_intents (fields in `fault` win). */
  armFault(fault: Record<string, unknown>): Promise<void>;
  /** Stops the process, ends the pool, drops the database. */
  close(): Promise<void>;
}

/**
 * The mock processor as the worker's chaos tests run it: a real OS process over a fresh
 * database, webhooks pointed nowhere (they are not what these tests are about). `env`
 * overrides its settings, e.g. a short `PROCESSOR_IDEMPOTENCY_RETENTION_MS`.
 */
export async function startProcessorUnderTest(
  label: string,
  env: Record<string, string> = {},
): Promise<ProcessorUnderTest> {
  const database = await createProcessorTestDatabase(label);
  const sql = postgres(database.url, { max: 2, onnotice: () => {} });
  const processor = await spawnProcessor({
    PROCESSOR_DATABASE_URL: database.url,
    PROCESSOR_WEBHOOK_URL: 'http://127.0.0.1:9/none',
    PROCESSOR_WEBHOOK_SECRET: 'whsec_test',
    ...env,
  });
  return {
    ...processor,
    database,
    sql,
    async armFault(fault) {
      await adminClient(processor.url).armFault({
        account: 'acct_tenant_a',
        method: 'POST',
        path_prefix: '/v1/payment_intents',
        ...fault,
      });
    },
    async close() {
      await processor.stop();
      await sql.end();
      await database.drop();
    },
  };
}
