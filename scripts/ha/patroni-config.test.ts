import { describe, expect, it } from 'vitest';
import { CHAOS_TIMINGS, patroniConfig, type ReplicationMode } from './patroni-config.ts';

const node = (mode: ReplicationMode, timings = CHAOS_TIMINGS) =>
  patroniConfig({
    scope: 'once',
    name: 'pg1',
    pgPort: 24002,
    restPort: 24005,
    etcdPort: 24000,
    dataDir: '/tmp/x/pg1',
    runDir: '/tmp/x',
    mode,
    timings,
  }) as { bootstrap: { dcs: Record<string, unknown> }; etcd?: unknown; etcd3?: unknown };

describe('patroniConfig', () => {
  it.each([
    ['async', false, false],
    ['sync', true, false],
    ['strict', true, true],
  ] as const)('%s: synchronous_mode %s, synchronous_mode_strict %s', (mode, sync, strict) => {
    const { dcs } = node(mode).bootstrap;
    expect(dcs.synchronous_mode).toBe(sync);
    expect(dcs.synchronous_mode_strict).toBe(strict);
    expect((dcs.postgresql as { use_pg_rewind: boolean }).use_pg_rewind).toBe(true);
  });

  it("uses etcd's v2 protocol: Patroni 3.0.2's etcd3 leader renewal can overwrite a new leader", () => {
    const config = node('sync');
    expect(config.etcd).toEqual({ hosts: ['127.0.0.1:24000'] });
    expect(config.etcd3).toBeUndefined();
  });

  it('refuses timings Patroni cannot keep (loop_wait + 2 * retry_timeout > ttl)', () => {
    expect(() => node('async', { ttl: 5, loopWait: 2, retryTimeout: 4 })).toThrow(/ttl/);
  });
});
