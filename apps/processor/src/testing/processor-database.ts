import { createEmptyTestDatabase } from '@once/postgres/testing';
import { runProcessorMigrations } from '../db/client.ts';

export interface ProcessorTestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A throw-away database for one test file, in the cluster the vitest global setup started:
 * empty (the processor migrates it at start), or with `migrated` the processor's own schema
 * applied from its migrations, for tests that read or write its tables without running it.
 */
export async function createProcessorTestDatabase(
  label: string,
  options: { migrated?: boolean } = {},
): Promise<ProcessorTestDatabase> {
  const { url, drop } = await createEmptyTestDatabase(`processor_${label}`);
  if (options.migrated) {
    try {
      await runProcessorMigrations(url);
    } catch (error) {
      await drop();
      throw error;
    }
  }
  return { url, drop };
}
