import { randomUUID } from 'node:crypto';
import { createDatabaseClient, type DatabaseClient } from '@once/db';
import { seedDemoData } from '@once/db/seed';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { createIdempotency } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAY_BODY } from '../harness/scenario.ts';
import { startWireCounter, type WireCounter } from '../harness/wire-count.ts';
import type { FetchHandler } from './fetch-routes.ts';
import type { Transaction } from './payment-write.ts';
import { createPaymentRoutes } from './routes.ts';

/**
 * The database work of one payment on each route the bench serves, counted on the wire:
 * what a guarded request costs, without a timing. A statement, round trip or commit added to
 * a route's hot path fails here; docs/benchmarks.md says why each one must exist.
 */

let database: TestDatabase;
let counter: WireCounter;
let client: DatabaseClient;
let route: (pathname: string) => FetchHandler | undefined;

beforeAll(async () => {
  database = await createTestDatabase('bench_database_work');
  await seedDemoData(database.client.db);
  await database.client
    .sql`create table bench_floor (id text primary key, done boolean not null default false)`;
  counter = await startWireCounter(Number(new URL(database.url).port));
  const url = new URL(database.url);
  url.port = String(counter.port);
  client = createDatabaseClient(url.toString(), { applicationName: 'bench-database-work', max: 2 });
  const idempotency = createIdempotency<Transaction>({ store: createDrizzleStore(client.db) });
  route = createPaymentRoutes(client.db, idempotency);
});
afterAll(async () => {
  await client?.close();
  await counter?.close();
  await database?.drop();
});

async function pay(path: string, key = randomUUID()): Promise<void> {
  const request = new Request(`http://bench${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: PAY_BODY,
  });
  const response = await route(path)!(request);
  const text = await response.text();
  expect(response.status, text).toBeLessThan(300);
}

/** Per request over `n` new keys, after the warm-up that prepares statements and settles the adaptive pre-check. */
async function workOf(path: string, n = 3) {
  for (let i = 0; i < 45; i++) await pay(path);
  counter.reset();
  for (let i = 0; i < n; i++) await pay(path);
  const counts = counter.read();
  return {
    roundTrips: counts.roundTrips / n,
    statements: counts.statements.length / n,
    commits: counts.commits / n,
    connections: counts.connections,
  };
}

describe('database work per request on the bench routes (new key per request)', () => {
  it.each([
    // Unguarded: the price read, then begin + the pipelined payment, outbox job and NOTIFY, commit.
    ['/trpc/pay.plain', 4, 6, 1],
    ['/fetch/plain', 4, 6, 1],
    // The leased floor: one durable autocommit write before it.
    ['/trpc/pay.floor', 5, 7, 2],
    ['/fetch/floor', 5, 7, 2],
    // The atomic floor: one more row in the pipelined batch.
    ['/trpc/pay.floorInTransaction', 4, 7, 1],
    ['/fetch/floor-in-transaction', 4, 7, 1],
    // Leased: the reservation's own commit (the leased floor's), and the completion UPDATE in
    // the batch: one statement more than the floor, no round trip, no commit.
    ['/trpc/pay.guarded', 5, 8, 2],
    ['/fetch/guarded', 5, 8, 2],
    // Atomic: the key row in the batch: the atomic floor's counts.
    ['/trpc/pay.guardedAtomic', 4, 7, 1],
    ['/fetch/guarded-atomic', 4, 7, 1],
    // Atomic, always reading first: one read-only round trip more, no commit.
    ['/trpc/pay.guardedAtomicAlwaysRead', 5, 8, 1],
    ['/fetch/guarded-atomic-always-read', 5, 8, 1],
    // Answers sealed (AES-256-GCM): CPU only, the wire is the clear store's.
    ['/fetch/guarded-encrypted', 5, 8, 2],
    ['/fetch/guarded-atomic-encrypted', 4, 7, 1],
    // The other adapters complete in the payment's transaction as fetch does: its counts.
    ['/next/route/leased', 5, 8, 2],
    ['/next/route/atomic', 4, 7, 1],
    ['/next/action/leased', 5, 8, 2],
    ['/next/action/atomic', 4, 7, 1],
    ['/hono/leased', 5, 8, 2],
    ['/hono/atomic', 4, 7, 1],
    // GraphQL stores the execution result after the resolver's transaction: its completion
    // UPDATE is an autocommit of its own, one round trip and one commit above leased fetch.
    ['/graphql/leased', 6, 8, 3],
  ])(
    '%s: %d round trips, %d statements, %d commits',
    async (path, roundTrips, statements, commits) => {
      expect(await workOf(path)).toEqual({ roundTrips, statements, commits, connections: 0 });
    },
  );
});

it('the encrypted routes store their answers sealed, the others in clear', async () => {
  const stored = async (path: string) => {
    const key = randomUUID();
    await pay(path, key);
    const [row] = await database.client.sql<
      { response_key_id: string | null; response_body: string }[]
    >`
      select response_key_id, response_body from idempotency_keys where key = ${key}`;
    return { keyId: row!.response_key_id, clear: row!.response_body.includes('paymentId') };
  };
  for (const path of ['/fetch/guarded-encrypted', '/fetch/guarded-atomic-encrypted'])
    expect(await stored(path)).toEqual({ keyId: 'bench', clear: false });
  expect(await stored('/fetch/guarded')).toEqual({ keyId: null, clear: true });
});
