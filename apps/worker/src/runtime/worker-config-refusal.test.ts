import { describe, expect, it } from 'vitest';
import { startProcess } from '../test-support/processes.ts';

describe('worker start-up with windows that do not fit', () => {
  it('refuses to start in one line, exit 1, before touching the database', async () => {
    const worker = startProcess(
      'apps/worker/src/runtime/main.ts',
      {
        // Nothing listens here: a refusal must come before any connection attempt.
        DATABASE_URL: 'postgres://postgres:password@127.0.0.1:9/once',
        WORKER_HEALTH_PORT: '0',
        WORKER_BACKOFF_BASE_MS: '60000',
        WORKER_BACKOFF_MAX_MS: '1000',
      },
      'w-refusal',
    );
    expect(await worker.exited).toBe(1);
    expect(worker.lines).toEqual([
      'worker: refusing to start: WORKER_BACKOFF_BASE_MS (60000) must not exceed WORKER_BACKOFF_MAX_MS (1000)',
    ]);
  }, 60_000);

  it('refuses an unknown pool mode in one line, exit 1', async () => {
    const worker = startProcess(
      'apps/worker/src/runtime/main.ts',
      {
        DATABASE_URL: 'postgres://postgres:password@127.0.0.1:9/once',
        WORKER_HEALTH_PORT: '0',
        DATABASE_POOL_MODE: 'pgbouncer',
      },
      'w-pool-mode-refusal',
    );
    expect(await worker.exited).toBe(1);
    expect(worker.lines).toEqual([
      'worker: refusing to start: DATABASE_POOL_MODE must be transaction (the URL is a transaction-mode pooler such as PgBouncer) or session, got "pgbouncer"',
    ]);
  }, 60_000);
});
