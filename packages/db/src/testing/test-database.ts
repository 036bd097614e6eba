import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createEmptyTestDatabase, ensureTemplateDatabase } from '@once/postgres/testing';
import { createDatabaseClient, type DatabaseClient } from '../client.ts';
import { migrationsFolder, runMigrations } from '../migrate.ts';

export { testAdminUrl, withDatabase } from '@once/postgres/testing';

export interface TestDatabase {
  /** URL of the new, migrated database. */
  url: string;
  /** URL of the cluster's maintenance database (for pg_terminate_backend and the like). */
  adminUrl: string;
  client: DatabaseClient;
  drop(): Promise<void>;
}

/** Named after the migrations' contents: an edited or added migration makes a new template. */
function migratedTemplateName(): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(migrationsFolder, { recursive: true, encoding: 'utf8' }).sort()) {
    const absolute = path.join(migrationsFolder, file);
    if (!file.endsWith('.sql') && !file.endsWith('.json')) continue;
    hash.update(`${file}\0`).update(readFileSync(absolute)).update('\0');
  }
  return `once_migrated_${hash.digest('hex').slice(0, 16)}`;
}

/** Once per process: the cluster keeps the template for every later test file. */
let migratedTemplate: Promise<string> | undefined;
function ensureMigratedTemplate(): Promise<string> {
  migratedTemplate ??= (async () => {
    const name = migratedTemplateName();
    await ensureTemplateDatabase(name, (url) => runMigrations(url));
    return name;
  })().catch((error: unknown) => {
    migratedTemplate = undefined;
    throw error;
  });
  return migratedTemplate;
}

/**
 * A fresh database with every app migration applied, dropped again by `drop()`: a copy of a
 * template the app's migrations were applied to once per test run.
 */
export async function createTestDatabase(label = 'test'): Promise<TestDatabase> {
  const empty = await createEmptyTestDatabase(label, { template: await ensureMigratedTemplate() });
  const client = createDatabaseClient(empty.url, { applicationName: `test-${label}` });
  return {
    url: empty.url,
    adminUrl: empty.adminUrl,
    client,
    async drop() {
      await client.close();
      await empty.drop();
    },
  };
}
