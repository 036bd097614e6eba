import { findFreePort } from '@once/postgres';
import { describe, expect, it } from 'vitest';
import { startProcess } from '../test-support/processes.ts';

describe('worker stop signal during startup', () => {
  it('exits 0 on SIGTERM while its migrations still wait for PostgreSQL', async () => {
    // Nothing listens on this port: the migration step keeps retrying (db.retry lines).
    const port = await findFreePort();
    const worker = startProcess(
      'apps/worker/src/runtime/main.ts',
      {
        DATABASE_URL: `postgres://postgres:password@127.0.0.1:${port}/once`,
        WORKER_HEALTH_PORT: '0',
        WORKER_ID: 'w-startup-signal',
      },
      'w-startup-signal',
    );
    await worker.waitForLine(/db\.retry what=migrations/, 60_000);
    expect(await worker.stop()).toBe(0);
    expect(worker.lines.some((line) => /worker\.stopped .*during=startup/.test(line))).toBe(true);
  }, 90_000);
});
