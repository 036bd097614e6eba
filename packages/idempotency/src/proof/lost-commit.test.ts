import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../core/engine.ts';
import { computeFingerprint } from '../core/fingerprint.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import { startTcpProxy, type TcpProxy, viaPort } from '../testing/tcp-proxy.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

let t: IdempotencyTestDatabase;
let proxy: TcpProxy;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('lostreply');
  await t.sql`create table payments (key text primary key)`;
  const u = new URL(t.url);
  proxy = await startTcpProxy(u.hostname, Number(u.port));
});
afterAll(async () => {
  await proxy?.close();
  await t?.drop();
});

describe('lost COMMIT reply', () => {
  it('the server committed but the client never heard: the retry finds and replays the committed result', async () => {
    const client = postgres(viaPort(t.url, proxy.port), { max: 4, onnotice: () => {} });
    const db = drizzle(client);
    const idempotency = createIdempotency({ store: createDrizzleStore(db) });
    const request = {
      tenantId: 't',
      operation: 'pay',
      key: 'k-lost',
      fingerprint: computeFingerprint('pay', { a: 1 }),
    };
    let runs = 0;
    const handler = (exec: Parameters<Parameters<typeof idempotency.execute>[1]>[0]) =>
      db.transaction(async (tx) => {
        runs++;
        await tx.execute(sql`insert into payments values (${request.key})`);
        const response = {
          status: 201,
          headers: {},
          body: JSON.stringify({ payment: request.key }),
        };
        await exec.complete(tx, response);
        return response;
      });

    const dropped = proxy.dropNextCommitReply();
    await expect(idempotency.execute(request, handler)).rejects.toThrow();
    await dropped; // the proxy saw the server's answer to COMMIT and cut the client off

    // The commit is durable although the client saw an error.
    expect(await t.sql`select state from idempotency_keys where key = ${request.key}`).toEqual([
      { state: 'completed' },
    ]);
    const retry = await idempotency.execute(request, handler);
    expect(retry).toEqual({
      kind: 'replayed',
      response: { status: 201, headers: {}, body: JSON.stringify({ payment: request.key }) },
    });
    expect(runs).toBe(1);
    expect(await t.sql`select count(*)::int as n from payments`).toEqual([{ n: 1 }]);
    await client.end({ timeout: 1 });
  });
});
