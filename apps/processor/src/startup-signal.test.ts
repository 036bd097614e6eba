import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { findFreePort } from '@once/postgres';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { TEST_PROCESSOR_SECRETS } from './testing/spawn-processor.ts';

const processorDir = fileURLToPath(new URL('..', import.meta.url));
// The lock runProcessorMigrations takes (db/client.ts); holding it parks a starting processor.
const PROCESSOR_MIGRATION_LOCK_ID = 0x0_0c_e0_02;

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
beforeAll(async () => {
  database = await createProcessorTestDatabase('startup_signal');
}, 60_000);
afterAll(async () => {
  await database?.drop();
});

describe('processor stop signal during startup', () => {
  it('exits 0 on SIGTERM while its migrations wait for the migration lock', async () => {
    const holder = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      await holder`select pg_advisory_lock(${PROCESSOR_MIGRATION_LOCK_ID})`;
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        cwd: processorDir,
        env: {
          ...process.env,
          ...TEST_PROCESSOR_SECRETS,
          PORT: String(await findFreePort()),
          PROCESSOR_DATABASE_URL: database.url,
          PROCESSOR_WEBHOOK_URL: 'http://127.0.0.1:9/unused',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk) => {
        output += chunk;
      });
      child.stderr.on('data', (chunk) => {
        output += chunk;
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      // Parked in pg_advisory_lock: startup has begun and cannot finish.
      for (let waited = 0; ; waited += 100) {
        const [row] = await holder<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where application_name = 'once-processor-migrate' and wait_event_type = 'Lock'`;
        if (row?.n) break;
        if (waited > 60_000) throw new Error(`processor never reached its migrations:\n${output}`);
        await sleep(100);
      }
      child.kill('SIGTERM');
      expect(await exited, output).toBe(0);
      expect(output).toContain('SIGTERM during startup: stopped');
    } finally {
      await holder.end({ timeout: 1 });
    }
  }, 90_000);
});
