import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { stampClientAddress } from './client-address.ts';

/** What the API would read as the client's address, through a real socket. */
let server: Server | undefined;
async function seenAddress(trustProxy: boolean, headers: Record<string, string>) {
  let seen: IncomingMessage['headers'] | undefined;
  server = createServer((req, res) => {
    stampClientAddress(req, trustProxy);
    seen = req.headers;
    res.end();
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await fetch(`http://127.0.0.1:${port}/`, { headers });
  return seen?.['x-once-client-address'];
}

afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve));
});

describe('the client address the web server hands to the API', () => {
  it('is the socket peer; a client-sent x-once-client-address or X-Forwarded-For changes nothing', async () => {
    expect(
      await seenAddress(false, {
        'x-once-client-address': '198.51.100.9',
        'x-forwarded-for': '203.0.113.5',
      }),
    ).toBe('127.0.0.1');
  });

  it('behind a trusted proxy, the last X-Forwarded-For entry (what the proxy saw)', async () => {
    expect(await seenAddress(true, { 'x-forwarded-for': '10.9.9.9, 203.0.113.5' })).toBe(
      '203.0.113.5',
    );
    // No usable entry: the socket peer, never a client's made-up value.
    expect(
      await seenAddress(true, {
        'x-forwarded-for': 'not-an-ip',
        'x-once-client-address': '198.51.100.9',
      }),
    ).toBe('127.0.0.1');
  });
});
