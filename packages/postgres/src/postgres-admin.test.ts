import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { findFreePort } from './postgres-admin.ts';

const held: net.Server[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((server) => new Promise((done) => server.close(done))));
});

function occupy(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      held.push(server);
      resolve();
    });
  });
}

describe('findFreePort', () => {
  it('returns the first of `count` consecutive ports that are all free', async () => {
    const base = await findFreePort({ count: 4 });
    await occupy(base + 1);
    // Candidates in [base, base + 4) for two ports: base (base + 1 taken), base + 1 (taken),
    // base + 2 (free with base + 3). Checking only the first port would accept base.
    for (let i = 0; i < 5; i++) {
      expect(await findFreePort({ count: 2, min: base, max: base + 4 })).toBe(base + 2);
    }
  });

  it('says so when no run of free ports fits, rather than returning a taken one', async () => {
    const base = await findFreePort({ count: 3 });
    await occupy(base + 1);
    await expect(findFreePort({ count: 2, min: base, max: base + 3 })).rejects.toThrow(
      `no 2 consecutive free TCP ports found between ${base} and ${base + 3}`,
    );
  });

  it('refuses a count that cannot fit the range', async () => {
    await expect(findFreePort({ count: 0 })).rejects.toThrow('cannot fit 0 consecutive ports');
    await expect(findFreePort({ count: 5, min: 30000, max: 30004 })).rejects.toThrow(
      'cannot fit 5 consecutive ports between 30000 and 30004',
    );
  });
});
