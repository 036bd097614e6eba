import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startHealthServer } from './health-server.ts';

describe('startHealthServer', () => {
  it('answers GET /healthz with 200 {ok:true} and status fields, 404 elsewhere', async () => {
    const server = await startHealthServer(0, () => ({ workerId: 'w1', inFlight: 2 }));
    try {
      const { port } = server.address() as AddressInfo;
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ ok: true, workerId: 'w1', inFlight: 2 });
      expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
    } finally {
      server.close();
    }
  });
});
