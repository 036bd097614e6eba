import { installDatabaseClock } from '@once/postgres/testing';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { problemDetailsResponse } from '../../adapters/fetch/problem-details.ts';
import { toGraphqlError } from '../../adapters/graphql/plugin.ts';
import { idempotencyErrorToTRPC } from '../../adapters/trpc/error-formatter.ts';
import { createIdempotency } from '../../core/engine.ts';
import { IdempotencyError, isIdempotencyError } from '../../core/errors.ts';
import { computeFingerprint } from '../../core/fingerprint.ts';
import type { OperationPolicy } from '../../core/types.ts';
import { refusal } from '../../testing/refusal.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { createKeyOperator } from './operator/key-operator.ts';
import { reapExpiredKeys } from './reaper.ts';
import { createDrizzleStore } from './store.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const TTL_MS = 10 * MINUTE;
const TOMBSTONE_MS = 7 * DAY;

let t: IdempotencyTestDatabase;
let clock: Awaited<ReturnType<typeof installDatabaseClock>>;
/** Connections opened after the clock was installed: their `now()` is the test's. */
let clocked: postgres.Sql;
let db: ReturnType<typeof drizzle>;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('tombstone');
  clock = await installDatabaseClock(t.sql);
  clocked = postgres(t.url, { max: 12, onnotice: () => {} });
  db = drizzle(clocked);
  await clocked`create table effects (key text not null)`;
});
afterAll(async () => {
  await clocked?.end({ timeout: 1 });
  await t?.drop();
});

let counter = 0;
const newKey = () => `key-${++counter}-${Math.random()}`;

/** One request of `mode` with `input`: each run writes one effect in the transaction that completes the key. */
function pay(key: string, policy: OperationPolicy, input: unknown = { amount: 100 }) {
  const idempotency = createIdempotency({ store: createDrizzleStore(db), defaults: policy });
  const request = {
    tenantId: 'tenant',
    operation: 'pay',
    key,
    fingerprint: computeFingerprint('pay', input),
  };
  const response = { status: 201, headers: {}, body: '{"email":"ada@example.com"}' };
  return idempotency.execute(request, async (exec) =>
    db.transaction(async (tx) => {
      await tx.execute(sql`insert into effects values (${key})`);
      await exec.complete(tx, response);
      return response;
    }),
  );
}

async function effects(key: string): Promise<number> {
  const [row] = await clocked<
    { n: number }[]
  >`select count(*)::int as n from effects where key = ${key}`;
  return row?.n ?? 0;
}

async function row(key: string) {
  const [found] =
    await clocked`select state, fingerprint, response_status, response_headers, response_body
    from idempotency_keys where key = ${key}`;
  return found;
}

describe.each([
  ['leased', {}],
  ['atomic', {}],
  // The handler runs; its insert meets the tombstone and its transaction (the effect) rolls back.
  ['atomic without precheck', { precheck: false }],
] as const)('tombstones after expiry, %s mode', (name, extra) => {
  const mode = name === 'leased' ? 'leased' : 'atomic';
  const policy: OperationPolicy = { mode, ttlMs: TTL_MS, tombstoneMs: TOMBSTONE_MS, ...extra };

  it('a retry after the ttl is refused (before and after the reaper converts), 422 on another request; after the window it runs as new', async () => {
    const key = newKey();
    expect((await pay(key, policy)).kind).toBe('executed');
    await clock.pass(TTL_MS + MINUTE);
    // Not yet converted: the answer does not depend on the reaper having run.
    expect((await refusal(pay(key, policy))).code).toBe('idempotency_key_expired');
    expect((await refusal(pay(key, policy, { amount: 5 }))).code).toBe('idempotency_key_reused');
    expect((await reapExpiredKeys(db)).tombstoned).toBeGreaterThanOrEqual(1);
    const tombstone = await row(key);
    expect(tombstone).toMatchObject({
      state: 'expired',
      response_status: 201,
      response_headers: null,
      response_body: null,
    });
    const error = await refusal(pay(key, policy));
    expect([error.code, error.status]).toEqual(['idempotency_key_expired', 409]);
    expect(await effects(key)).toBe(1);
    await clock.pass(TOMBSTONE_MS);
    expect((await pay(key, policy)).kind).toBe('executed');
    expect(await effects(key)).toBe(2);
  });

  it('the reaper deletes a tombstone when its window ends; the key then runs as new', async () => {
    const key = newKey();
    await pay(key, policy);
    await clock.pass(TTL_MS + MINUTE);
    await reapExpiredKeys(db);
    await clock.pass(TOMBSTONE_MS);
    await reapExpiredKeys(db);
    expect(await row(key)).toBeUndefined();
    expect((await pay(key, policy)).kind).toBe('executed');
    expect(await effects(key)).toBe(2);
  });

  it('without tombstoneMs a late retry runs again, as before', async () => {
    const key = newKey();
    const noTombstone = { ...policy, tombstoneMs: 0 };
    await pay(key, noTombstone);
    await clock.pass(TTL_MS + MINUTE);
    expect((await pay(key, noTombstone)).kind).toBe('executed');
    expect(await effects(key)).toBe(2);
  });

  it('late retries racing the reaper converting their keys: every one refused, nothing runs twice', async () => {
    const keys = Array.from({ length: 8 }, newKey);
    for (const key of keys) await pay(key, policy);
    await clock.pass(TTL_MS + MINUTE);
    const outcomes = await Promise.allSettled([
      reapExpiredKeys(db, { batchSize: 1 }),
      ...keys.flatMap((key) => [pay(key, policy), pay(key, policy)]),
      reapExpiredKeys(db, { batchSize: 2 }),
    ]);
    const [first, ...rest] = outcomes;
    const last = rest.pop();
    expect([first?.status, last?.status]).toEqual(['fulfilled', 'fulfilled']);
    for (const outcome of rest) {
      expect(outcome.status).toBe('rejected');
      const reason = (outcome as PromiseRejectedResult).reason;
      expect(isIdempotencyError(reason, 'idempotency_key_expired'), String(reason)).toBe(true);
    }
    for (const key of keys) {
      expect(await effects(key)).toBe(1);
      expect((await row(key))?.state).toBe('expired');
    }
  });
});

describe('tombstones: the operator and every transport', () => {
  it('an operator may evict a tombstone (the key then runs again)', async () => {
    const key = newKey();
    const policy: OperationPolicy = { ttlMs: TTL_MS, tombstoneMs: TOMBSTONE_MS };
    await pay(key, policy);
    await clock.pass(TTL_MS + MINUTE);
    await reapExpiredKeys(db);
    const operator = createKeyOperator(db);
    const id = { tenantId: 'tenant', operation: 'pay', key };
    const seen = await operator.inspect(id);
    expect(seen).toMatchObject({ state: 'expired', evictable: true, responseStatus: 201 });
    await operator.evict(id, { revision: seen?.revision ?? '', actor: 'ops', reason: 'asked to' });
    expect((await pay(key, policy)).kind).toBe('executed');
  });

  it.each([
    ['idempotency_key_expired', 409, 'CONFLICT'],
    ['idempotency_answer_unreadable', 500, 'INTERNAL_SERVER_ERROR'],
  ] as const)(
    '%s: REST %i problem+json, tRPC %s, GraphQL extensions',
    async (code, status, trpc) => {
      const error = new IdempotencyError(code);
      const rest = problemDetailsResponse(error);
      expect(rest.status).toBe(status);
      expect(rest.headers.get('content-type')).toBe('application/problem+json');
      expect(await rest.json()).toMatchObject({ code, status });
      expect(idempotencyErrorToTRPC(error).code).toBe(trpc);
      expect(toGraphqlError(error).extensions).toMatchObject({ code, http: { status } });
    },
  );
});
