import { createEmptyTestDatabase } from '@once/postgres/testing';

export interface ProcessorTestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A throw-away, empty database for one test file, in the cluster the vitest global setup
 * started (the processor migrates it at start).
 *
 * @example
 * const database = await createProcessorTestDatabase('faults');
 * await database.drop();
 */
export async function createProcessorTestDatabase(label: string): Promise<ProcessorTestDatabase> {
  const { url, drop } = await createEmptyTestDatabase(`processor_${label}`);
  return { url, drop };
}
