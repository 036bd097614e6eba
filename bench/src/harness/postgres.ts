import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createDatabaseClient, runMigrations } from '@once/db';
import { seedDemoData } from '@once/db/seed';
import { ensureDatabase, findFreePort } from '@once/postgres';
import {
  type EmbeddedPostgresHandle,
  spawnEmbeddedPostgres as startEmbeddedPostgres,
} from '@once/postgres/embedded';

/** The bench's own durable Postgres cluster with the migrated, seeded app database. */
export interface BenchPostgres {
  /** URL of the app database (schema migrated, demo tenants seeded). */
  readonly url: string;
  /** Creates (if needed) another database in the same cluster and returns its URL. */
  createDatabase(database: string): Promise<string>;
  /** Server version and the settings that matter for write latency. */
  readonly settings: Record<string, string>;
  /** Stops and starts the same cluster (same data directory, same port): a store restart. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const APP_DATABASE = 'once_bench';
const REPORTED_SETTINGS = [
  'server_version',
  'fsync',
  'synchronous_commit',
  'full_page_writes',
  'wal_sync_method',
  'shared_buffers',
  'max_connections',
  'wal_level',
  'max_wal_size',
  'checkpoint_timeout',
];

/**
 * Starts embedded PostgreSQL with production durability (fsync, synchronous_commit and
 * full_page_writes on) in a data directory the bench owns, so `restart()` keeps the data.
 */
export async function startBenchPostgres(): Promise<BenchPostgres> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'once-bench-pg-'));
  const port = await findFreePort();
  let handle: EmbeddedPostgresHandle = await startEmbeddedPostgres({
    dataDir,
    port,
    durability: 'durable',
  });
  await ensureDatabase(handle.adminUrl, APP_DATABASE);
  const url = handle.databaseUrl(APP_DATABASE);
  await runMigrations(url);
  const client = createDatabaseClient(url, { applicationName: 'once-bench-setup', max: 1 });
  await seedDemoData(client.db);
  // One small row per durable write: the floor the overhead and store scenarios compare with.
  await client.sql`create table if not exists bench_floor (id text primary key, done boolean not null default false)`;
  const rows = await client.sql<{ name: string; setting: string; unit: string | null }[]>`
    select name, setting, unit from pg_settings where name in ${client.sql(REPORTED_SETTINGS)}`;
  const settings = Object.fromEntries(
    rows.map((r) => [r.name, r.unit ? `${r.setting} (${r.unit})` : r.setting]),
  );
  await client.close();
  return {
    url,
    async createDatabase(database) {
      await ensureDatabase(handle.adminUrl, database);
      return handle.databaseUrl(database);
    },
    settings,
    async restart() {
      await handle.stop();
      handle = await startEmbeddedPostgres({ dataDir, port, durability: 'durable' });
    },
    async stop() {
      await handle.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
