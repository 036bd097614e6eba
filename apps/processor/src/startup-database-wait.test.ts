import { spawn } from 'node:child_process';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { findFreePort } from '@once/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import {
  type SpawnedProcessor,
  spawnProcessor,
  TEST_PROCESSOR_SECRETS,
} from './testing/spawn-processor.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
beforeAll(async () => {
  database = await createProcessorTestDatabase('startup_wait');
}, 60_000);
afterAll(async () => {
  await database?.drop();
});

/** PostgreSQL's answer to a connection while it recovers: FATAL 57P03, then it hangs up. */
function startingUpError(): Buffer {
  const fields = [
    ['S', 'FATAL'],
    ['V', 'FATAL'],
    ['C', '57P03'],
    ['M', 'the database system is starting up'],
  ]
    .map(([tag, value]) => `${tag}${value}\0`)
    .join('');
  const body = Buffer.from(`${fields}\0`, 'utf8');
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

const SSL_REQUEST_CODE = 80877103;

/**
 * A PostgreSQL that is starting up for its first `refusals` connections (each is answered
 * exactly as a recovering server answers its startup packet) and then a plain TCP relay to
 * the real one: the window the processor met during a crash-restart of its database.
 */
async function startingUpPostgres(target: URL, refusals: number) {
  let refused = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => {});
    if (refused >= refusals) {
      const upstream = connect(Number(target.port), target.hostname);
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      upstream.on('error', () => client.destroy());
      client.pipe(upstream).pipe(client);
      return;
    }
    client.once('data', function answer(chunk: Buffer) {
      // A client that asks for TLS first is told no, then sends its startup packet.
      if (chunk.length === 8 && chunk.readInt32BE(4) === SSL_REQUEST_CODE) {
        client.write('N');
        client.once('data', answer);
        return;
      }
      refused++;
      client.end(startingUpError());
    });
  });
  const port = await findFreePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    refused: () => refused,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('processor start against a database that is starting up', () => {
  it('waits out 57P03 with backoff and serves once PostgreSQL accepts connections', async () => {
    const front = await startingUpPostgres(new URL(database.url), 4);
    let processor: SpawnedProcessor | undefined;
    try {
      processor = await spawnProcessor({
        PROCESSOR_DATABASE_URL: front.url,
        PROCESSOR_WEBHOOK_URL: 'http://127.0.0.1:9/unused',
      });
      expect(front.refused()).toBe(4);
      const health = await fetch(`${processor.url}/healthz`);
      expect(health.status).toBe(200);
      // Each wait is said once, with what failed and how long until the next try.
      const waits = processor.output.filter((line) => line.includes('processor.start.db_wait'));
      expect(waits.length).toBeGreaterThanOrEqual(1);
      expect(waits[0]).toMatch(/57P03/);
      expect(processor.output.join('\n')).not.toContain('cannot start');
      expect(await processor.stop()).toBe(0);
    } finally {
      await processor?.kill().catch(() => {});
      await front.close();
    }
  }, 90_000);

  it('exits 1 in one line on a configuration error (a database that does not exist)', async () => {
    const missing = new URL(database.url);
    missing.pathname = '/once_no_such_database';
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: {
        ...process.env,
        ...TEST_PROCESSOR_SECRETS,
        PORT: String(await findFreePort()),
        PROCESSOR_DATABASE_URL: missing.toString(),
        PROCESSOR_WEBHOOK_URL: 'http://127.0.0.1:9/unused',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(output.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^processor: cannot start: .*database "once_no_such_database" does not exist/,
      ),
    ]);
  }, 60_000);
});
