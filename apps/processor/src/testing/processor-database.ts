import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

/** A throw-away database for one test file, in the cluster the vitest global setup started. */
export async function createProcessorTestDatabase(
  label: string,
): Promise<{ url: string; drop(): Promise<void> }> {
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
