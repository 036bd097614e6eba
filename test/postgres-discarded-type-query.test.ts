import net from 'node:net';
import { testAdminUrl } from '@once/postgres/testing';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { isDiscardedTypeQuery } from './support/discarded-type-query.ts';

const adminUrl = () => new URL(testAdminUrl());
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A TCP proxy to the test cluster that holds back postgres.js's array-type query: the
 * connection hangs while the driver waits on it, as one does that a failover or a restart
 * catches just after it opened. Resolves `held` when it holds one.
 */
async function proxyHoldingTheTypeQuery(): Promise<{ port: number; held: Promise<void> }> {
  const target = adminUrl();
  let hold: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    hold = resolve;
  });
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    client.on('data', (chunk) => {
      if (chunk.includes('typcategory')) hold();
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return { port: (server.address() as net.AddressInfo).port, held };
}

/**
 * Opens a connection through the proxy and ends the pool while the type query is held: `end`
 * destroys the connection, the query that opened it is refused, and the type query's
 * rejection (`write CONNECTION_DESTROYED`) is left with no one.
 */
async function endWhileTheTypeQueryIsHeld(): Promise<void> {
  const url = adminUrl();
  const proxy = await proxyHoldingTheTypeQuery();
  url.port = String(proxy.port);
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
  const first = sql`select 1`.catch((error: Error) => error);
  await proxy.held;
  await sql.end({ timeout: 0.05 });
  expect(await first).toMatchObject({ code: 'CONNECTION_DESTROYED' });
}

describe("postgres.js's discarded array-type query (porsager/postgres#1192)", () => {
  it('rejects with no one waiting when its connection dies, and only it is let through', async () => {
    const unhandled: unknown[] = [];
    const listen = (reason: unknown) => unhandled.push(reason);
    // While a listener of ours is on, Vitest leaves unhandled rejections to it.
    process.on('unhandledRejection', listen);
    cleanups.push(() => process.off('unhandledRejection', listen));
    await endWhileTheTypeQueryIsHeld();
    await expect.poll(() => unhandled.length).toBeGreaterThan(0);
    expect(unhandled.every(isDiscardedTypeQuery)).toBe(true);
    // A rejection of any other query, or without one, still fails the run.
    expect(isDiscardedTypeQuery(Object.assign(new Error('x'), { query: 'select 1' }))).toBe(false);
    expect(isDiscardedTypeQuery(new Error('write CONNECTION_DESTROYED'))).toBe(false);
  });

  // Without vitest.config.ts's `onUnhandledError`, this fails the run ("Unhandled Rejection:
  // write CONNECTION_DESTROYED", no failed test), as a failover test once did.
  it('does not fail the run', async () => {
    await endWhileTheTypeQueryIsHeld();
    // Let the rejection reach Vitest's own listener before the test ends.
    await new Promise((resolve) => setTimeout(resolve, 100));
  });
});
