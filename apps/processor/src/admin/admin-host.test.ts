import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcessor } from '../start-processor.ts';
import { createProcessorTestDatabase } from '../testing/processor-database.ts';
import { startTestProcessor } from '../testing/test-processor.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;

beforeAll(async () => {
  database = await createProcessorTestDatabase('admin_host');
  processor = await startTestProcessor({
    databaseUrl: database.url,
    publicUrl: 'https://pay.example.test',
  });
}, 60_000);
afterAll(async () => {
  await processor?.stop();
  await database?.drop();
});

/** GET `path` over real HTTP with this `Host` header (fetch cannot set one). */
function getWithHost(path: string, host: string): Promise<{ status: number; body: string }> {
  const url = new URL(path, processor.url);
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host, 'x-admin-token': 'once-admin' } }, (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the admin API answers only to its own names (DNS rebinding)', () => {
  it('refuses a Host that is not the processor’s with 403 host_not_allowed, token or not', async () => {
    const port = new URL(processor.url).port;
    const refused = await getWithHost('/admin/ledger', `rebind.attacker.example:${port}`);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toEqual({
      error: {
        code: 'host_not_allowed',
        message: expect.stringContaining('rebind.attacker.example'),
      },
    });
  });

  it('answers its loopback address, localhost, a private name and its public URL’s host', async () => {
    const port = new URL(processor.url).port;
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      'processor:4100',
      'pay.example.test',
    ]) {
      expect((await getWithHost('/admin/ledger', host)).status, host).toBe(200);
    }
  });

  it('the Stripe API and the challenge pages are not the admin API: their Host is not checked', async () => {
    const health = await getWithHost('/healthz', 'rebind.attacker.example');
    expect(health.status).toBe(200);
  });
});
