import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

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
  const adminUrl = process.env.ONCE_TEST_ADMIN_URL;
  if (!adminUrl)
    throw new Error('ONCE_TEST_ADMIN_URL is unset: run tests through vitest from the repo');
  const name = `processor_${label}_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await sql.unsafe(`drop database if exists ${name} with (force)`);
      await sql.end();
    },
  };
}
