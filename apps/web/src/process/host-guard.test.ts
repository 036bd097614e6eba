import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refuseForeignHost } from './host-guard.ts';

// The guard as main.ts puts it in front of Next, on a real HTTP server.
let server: Server;
let port: number;
beforeAll(async () => {
  server = createServer((req, res) => {
    if (refuseForeignHost(req, res, ['shop.example.com'])) return;
    res.end('next would answer');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

function get(host: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/ops', headers: { host } }, (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: String(res.headers['content-type']),
          body,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the web server answers only to its own names (DNS rebinding)', () => {
  it('a rebound name gets 403 host_not_allowed, and Next never sees the request', async () => {
    const refused = await get(`rebind.attacker.example:${port}`);
    expect(refused.status).toBe(403);
    expect(refused.type).toBe('application/problem+json');
    expect(JSON.parse(refused.body)).toMatchObject({
      type: 'https://once.dev/problems/host_not_allowed',
      status: 403,
      code: 'host_not_allowed',
    });
  });

  it('the loopback address, localhost, a private name and a configured name pass', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'web:3000', 'shop.example.com']) {
      expect(await get(host), host).toMatchObject({ status: 200, body: 'next would answer' });
    }
  });
});
