import { describe, expect, it } from 'vitest';
import { readWorkerConfig } from './worker-config.ts';

const base = { DATABASE_URL: 'postgres://localhost/once' };

describe('the worker health server bind address (WORKER_HEALTH_HOST)', () => {
  it('defaults to every interface (a container health check and its orchestrator both reach it)', () => {
    expect(readWorkerConfig(base).healthHost).toBe('0.0.0.0');
  });

  it('takes an IP literal and refuses anything else at start', () => {
    expect(readWorkerConfig({ ...base, WORKER_HEALTH_HOST: '127.0.0.1' }).healthHost).toBe(
      '127.0.0.1',
    );
    expect(() => readWorkerConfig({ ...base, WORKER_HEALTH_HOST: 'localhost' })).toThrow(
      /^WORKER_HEALTH_HOST must be an IP address/,
    );
  });
});
