import assert from 'node:assert/strict';
import {
  type IdempotencyStore,
  INITIAL_RECOVERY_POINT,
  identity,
  type KeyIdentity,
  type ReserveInput,
  type ReserveResult,
  type StoredResponse,
} from '../../core/types.ts';

/**
 * One promise of the `IdempotencyStore` port, checked against a store: `run` resolves when the
 * store keeps it and throws (an `AssertionError`) when it does not.
 */
export interface StoreContractCase {
  /** `<method>: <promise>`, stable across releases so a runner can skip one by name. */
  name: string;
  run: () => Promise<void>;
}

/**
 * The store contract: what the engine relies on from a store, as test cases a store author
 * runs in their own test runner (vitest, jest, node:test: anything that takes a name and an
 * async function). Uses only `node:assert`; the package needs no test framework.
 *
 * `makeStore` is called once per case; every case works in its own tenants, keys and rate
 * limit scopes, so the cases may share one database and run in any order (not concurrently
 * with each other: one case measures concurrency itself).
 *
 * Time: the cases never sleep. A lease of `leaseMs: 0` and a retention of `ttlMs: 0` must be
 * expired for every LATER call (the Drizzle store compares with the database's `now()`), and
 * a lease of a minute or a retention of an hour must not be.
 *
 * @example
 * import { storeContractCases } from '@once/idempotency/store/contract';
 * describe('my store keeps the idempotency store contract', () => {
 *   for (const c of storeContractCases(() => createMyStore(db))) it(c.name, c.run);
 * });
 */
export function storeContractCases<TTx>(
  makeStore: () => IdempotencyStore<TTx> | Promise<IdempotencyStore<TTx>>,
): StoreContractCase[] {
  return CASES.map(({ name, run }) => ({
    name,
    run: async () => run(await makeStore(), scopeOfOneCase()),
  }));
}

/** Long enough that no case outlives it. */
const LIVE_LEASE_MS = 60_000;
const KEEP_MS = 60 * 60_000;
/** A rate-limit window no case crosses (the Drizzle store's windows are fixed, epoch-aligned). */
const LONG_WINDOW_MS = 7 * 24 * 60 * 60_000;

const RESPONSE: StoredResponse = {
  status: 201,
  headers: { 'content-type': 'application/json', location: '/payments/pay_1' },
  body: '{"id":"pay_1"}',
};

/** Names unique to one run of one case: tenants, keys and principals never meet another case's. */
interface CaseScope {
  tenant: (name?: string) => string;
  key: (name?: string) => string;
  token: () => string;
  /** A reservation of a fresh key by a fresh holder; `overrides` name what the case varies. */
  input: (overrides?: Partial<ReserveInput>) => ReserveInput;
}

function scopeOfOneCase(): CaseScope {
  const run = globalThis.crypto.randomUUID().slice(0, 8);
  const tenant = (name = 'a') => `contract-${run}-tenant-${name}`;
  const key = (name = 'k') => `contract-${run}-key-${name}`;
  const token = () => globalThis.crypto.randomUUID();
  return {
    tenant,
    key,
    token,
    input: (overrides = {}) => ({
      tenantId: tenant(),
      operation: 'contract.pay',
      key: key(),
      principal: `contract-${run}-principal`,
      fingerprint: 'fingerprint-a',
      ownerToken: token(),
      leaseMs: LIVE_LEASE_MS,
      ttlMs: KEEP_MS,
      onExpiredLease: 'resume',
      rateLimit: undefined,
      ...overrides,
    }),
  };
}

function acquired(result: ReserveResult, what: string) {
  assert.equal(result.kind, 'acquired', `${what}: expected the key to be acquired`);
  return result as Extract<ReserveResult, { kind: 'acquired' }>;
}

function existing(result: ReserveResult, what: string) {
  assert.equal(result.kind, 'existing', `${what}: expected the existing row back`);
  return result as Extract<ReserveResult, { kind: 'existing' }>;
}

/** Reserves `input`, asserting the caller acquired it; returns `input`. */
async function held(store: IdempotencyStore<unknown>, input: ReserveInput, what: string) {
  acquired(await store.reserve(input), what);
  return input;
}

/** The holder of `input` completes it with {@link RESPONSE}, kept `ttlMs`. */
function completeAs(
  store: IdempotencyStore<unknown>,
  input: ReserveInput,
  ttlMs = KEEP_MS,
  tx: unknown = undefined,
) {
  return store.complete(tx, identity(input), input.ownerToken, RESPONSE, ttlMs);
}

type Case = {
  name: string;
  run: (store: IdempotencyStore<unknown>, s: CaseScope) => Promise<void>;
};

/** Every holder-only write with `ownerToken`, as `[name, result]`. */
async function holderWrites(store: IdempotencyStore<unknown>, id: KeyIdentity, ownerToken: string) {
  return [
    ['complete', await store.complete(undefined, id, ownerToken, RESPONSE, KEEP_MS)],
    ['advance', await store.advance(undefined, id, ownerToken, 'charged', null)],
    ['renew', await store.renew(id, ownerToken, LIVE_LEASE_MS)],
    ['endLease', await store.endLease(id, ownerToken)],
    ['markUnknown', await store.markUnknown(id, ownerToken)],
    ['release', await store.release(id, ownerToken)],
  ] as const;
}

const CASES: Case[] = [
  {
    name: 'reserve: a new key is created, held by the caller, at the initial recovery point',
    async run(store, s) {
      const input = s.input();
      const r = acquired(await store.reserve(input), 'first reservation');
      assert.equal(r.created, true, 'created');
      assert.equal(r.takenOver, false, 'takenOver');
      assert.equal(r.record.state, 'in_progress');
      assert.equal(r.record.ownerToken, input.ownerToken);
      assert.equal(r.record.fingerprint, input.fingerprint);
      assert.equal(r.record.recoveryPoint, INITIAL_RECOVERY_POINT);
      assert.equal(r.record.response, null);
      assert.ok(r.record.lockedUntil, 'a held key has a lease');
      assert.ok(r.record.lockedUntil > r.record.now, 'the lease ends in the future');
    },
  },
  {
    name: 'reserve: concurrent reservations of one key acquire it exactly once',
    async run(store, s) {
      const inputs = Array.from({ length: 16 }, () => s.input());
      const results = await Promise.all(inputs.map((input) => store.reserve(input)));
      const winners = results.filter((r) => r.kind === 'acquired');
      assert.equal(
        winners.length,
        1,
        `${winners.length} of 16 racing reservations acquired the key`,
      );
      const owner = (winners[0] as Extract<ReserveResult, { kind: 'acquired' }>).record.ownerToken;
      for (const r of results.filter((r) => r.kind !== 'acquired')) {
        assert.equal(existing(r, 'a losing reservation').record.ownerToken, owner);
      }
    },
  },
  {
    name: 'reserve: keys are scoped by tenant',
    async run(store, s) {
      const a = s.input({ tenantId: s.tenant('a') });
      const b = s.input({ tenantId: s.tenant('b') });
      acquired(await store.reserve(a), 'tenant a');
      assert.equal(
        acquired(await store.reserve(b), 'tenant b, same key').record.ownerToken,
        b.ownerToken,
      );
      assert.equal(await completeAs(store, a), 'ok');
      const stillB = existing(
        await store.reserve(s.input({ tenantId: s.tenant('b') })),
        'tenant b',
      );
      assert.equal(
        stillB.record.state,
        'in_progress',
        "tenant a's completion never shows in tenant b",
      );
      assert.equal(stillB.record.ownerToken, b.ownerToken);
    },
  },
  {
    name: 'reserve: keys are scoped by operation',
    async run(store, s) {
      const pay = s.input({ operation: 'contract.pay' });
      const refund = s.input({ operation: 'contract.refund' });
      acquired(await store.reserve(pay), 'operation pay');
      acquired(await store.reserve(refund), 'operation refund, same tenant and key');
      assert.equal(await completeAs(store, pay), 'ok');
      const refundRow = existing(
        await store.reserve(s.input({ operation: 'contract.refund' })),
        'refund',
      );
      assert.equal(refundRow.record.state, 'in_progress');
    },
  },
  {
    name: 'reserve: a held key is returned with the fingerprint it was reserved with (the engine answers 409 or 422)',
    async run(store, s) {
      const first = await held(store, s.input({ fingerprint: 'fingerprint-a' }), 'first');
      const other = existing(
        await store.reserve(s.input({ fingerprint: 'fingerprint-b' })),
        'other request',
      );
      assert.equal(other.record.fingerprint, 'fingerprint-a');
      assert.equal(other.record.state, 'in_progress');
      assert.equal(other.record.ownerToken, first.ownerToken);
    },
  },
  {
    name: 'reserve: a live lease is never taken over, even by the same request',
    async run(store, s) {
      const first = await held(store, s.input(), 'first');
      const retry = existing(await store.reserve(s.input()), 'retry while the lease is live');
      assert.equal(retry.record.ownerToken, first.ownerToken);
    },
  },
  {
    name: 'complete: the stored response comes back to every later reservation, byte for byte',
    async run(store, s) {
      const first = await held(store, s.input(), 'first');
      assert.equal(await completeAs(store, first), 'ok');
      for (const fingerprint of ['fingerprint-a', 'fingerprint-b']) {
        const later = existing(await store.reserve(s.input({ fingerprint })), 'after completion');
        assert.equal(later.record.state, 'completed');
        assert.equal(later.record.fingerprint, 'fingerprint-a');
        assert.deepEqual(later.record.response, RESPONSE);
      }
      assert.equal(await store.isCompletedBy(identity(first), first.ownerToken), true);
      assert.equal(await store.isCompletedBy(identity(first), s.token()), false);
    },
  },
  {
    name: 'complete: inside a transaction that rolls back, it stores nothing',
    async run(store, s) {
      const first = await held(store, s.input(), 'first');
      const rollback = new Error('business write failed');
      await assert.rejects(
        store.transaction(async (tx) => {
          assert.equal(await completeAs(store, first, KEEP_MS, tx), 'ok');
          throw rollback;
        }),
        (error) => error === rollback,
      );
      assert.equal(await store.isCompletedBy(identity(first), first.ownerToken), false);
      assert.equal(
        existing(await store.reserve(s.input()), 'after rollback').record.state,
        'in_progress',
      );
      await store.transaction(async (tx) => {
        assert.equal(await completeAs(store, first, KEEP_MS, tx), 'ok');
      });
      assert.equal(await store.isCompletedBy(identity(first), first.ownerToken), true);
    },
  },
  {
    name: 'holder writes: another owner token changes nothing and gets lost',
    async run(store, s) {
      const holder = await held(store, s.input(), 'holder');
      for (const [write, result] of await holderWrites(store, identity(holder), s.token())) {
        assert.equal(result, 'lost', `${write} with a foreign owner token`);
      }
      const row = existing(await store.reserve(s.input()), 'after the foreign writes').record;
      assert.equal(row.state, 'in_progress');
      assert.equal(row.ownerToken, holder.ownerToken);
      assert.equal(row.recoveryPoint, INITIAL_RECOVERY_POINT);
      assert.equal(row.response, null);
    },
  },
  {
    name: 'reserve: an expired lease of the same request is taken over, and its old holder is fenced off',
    async run(store, s) {
      const old = await held(store, s.input({ leaseMs: 0 }), 'old holder');
      const next = s.input();
      const taken = acquired(await store.reserve(next), 'retry after the lease expired');
      assert.equal(taken.takenOver, true, 'takenOver');
      assert.equal(taken.created, false, 'created');
      assert.equal(taken.record.ownerToken, next.ownerToken);
      for (const [write, result] of await holderWrites(store, identity(old), old.ownerToken)) {
        assert.equal(result, 'lost', `${write} by the holder whose lease was taken over`);
      }
      assert.equal(await completeAs(store, next), 'ok');
      assert.deepEqual(existing(await store.reserve(s.input()), 'after').record.response, RESPONSE);
    },
  },
  {
    name: 'reserve: an expired lease is never taken over by a different request',
    async run(store, s) {
      acquired(await store.reserve(s.input({ leaseMs: 0, fingerprint: 'fingerprint-a' })), 'old');
      const other = existing(
        await store.reserve(s.input({ fingerprint: 'fingerprint-b' })),
        'other request',
      );
      assert.equal(other.record.fingerprint, 'fingerprint-a');
    },
  },
  {
    name: 'advance: the recovery point and its data survive the holder (the next holder resumes there)',
    async run(store, s) {
      const old = await held(store, s.input(), 'old');
      const data = { chargeId: 'ch_1', amount: 100 };
      assert.equal(
        await store.advance(undefined, identity(old), old.ownerToken, 'charged', data),
        'ok',
      );
      assert.equal(await store.endLease(identity(old), old.ownerToken), 'ok');
      const resumed = acquired(await store.reserve(s.input()), 'retry after endLease');
      assert.equal(resumed.takenOver, true);
      assert.equal(resumed.record.recoveryPoint, 'charged');
      assert.deepEqual(resumed.record.recoveryData, data);
    },
  },
  {
    name: "reserve: an expired lease with a committed phase under onExpiredLease 'unknown' is parked unknown",
    async run(store, s) {
      const old = await held(store, s.input({ onExpiredLease: 'unknown' }), 'old');
      assert.equal(
        await store.advance(undefined, identity(old), old.ownerToken, 'charged', null),
        'ok',
      );
      assert.equal(await store.endLease(identity(old), old.ownerToken), 'ok');
      const parked = existing(await store.reserve(s.input({ onExpiredLease: 'unknown' })), 'retry');
      assert.equal(parked.record.state, 'unknown');
      assert.equal(await completeAs(store, old), 'lost');
    },
  },
  {
    name: 'release: a key with nothing committed may run again, any request',
    async run(store, s) {
      const old = await held(store, s.input(), 'old');
      assert.equal(await store.release(identity(old), old.ownerToken), 'ok');
      const again = acquired(
        await store.reserve(s.input({ fingerprint: 'fingerprint-b' })),
        'after release',
      );
      assert.equal(again.created, false);
      assert.equal(again.record.fingerprint, 'fingerprint-b');
      assert.equal(again.record.recoveryPoint, INITIAL_RECOVERY_POINT);
      assert.equal(await completeAs(store, old), 'lost');
    },
  },
  {
    name: 'release: refused once a phase committed (a committed phase never runs twice)',
    async run(store, s) {
      const holder = await held(store, s.input(), 'holder');
      assert.equal(
        await store.advance(undefined, identity(holder), holder.ownerToken, 'charged', null),
        'ok',
      );
      assert.notEqual(await store.release(identity(holder), holder.ownerToken), 'ok');
      const row = existing(await store.reserve(s.input()), 'after the refused release').record;
      assert.equal(row.state, 'in_progress');
      assert.equal(row.recoveryPoint, 'charged');
    },
  },
  {
    name: 'markUnknown: the key answers unknown until reconciliation; its holder is fenced off',
    async run(store, s) {
      const holder = await held(store, s.input(), 'holder');
      assert.equal(await store.markUnknown(identity(holder), holder.ownerToken), 'ok');
      for (const fingerprint of ['fingerprint-a', 'fingerprint-b']) {
        const row = existing(await store.reserve(s.input({ fingerprint, leaseMs: 0 })), 'retry');
        assert.equal(row.record.state, 'unknown');
      }
      assert.equal(await completeAs(store, holder), 'lost');
    },
  },
  {
    name: "holder writes: after the holder's own completion, renew/release/endLease/markUnknown answer finished",
    async run(store, s) {
      const holder = await held(store, s.input(), 'holder');
      const id = identity(holder);
      assert.equal(await store.complete(undefined, id, holder.ownerToken, RESPONSE, KEEP_MS), 'ok');
      assert.equal(await store.renew(id, holder.ownerToken, LIVE_LEASE_MS), 'finished');
      assert.equal(await store.release(id, holder.ownerToken), 'finished');
      assert.equal(await store.endLease(id, holder.ownerToken), 'finished');
      assert.equal(await store.markUnknown(id, holder.ownerToken), 'finished');
      assert.deepEqual(existing(await store.reserve(s.input()), 'after').record.response, RESPONSE);
    },
  },
  {
    name: 'retention: a response past its ttl is no longer replayed; the key runs again',
    async run(store, s) {
      const old = await held(store, s.input(), 'old');
      assert.equal(await completeAs(store, old, 0), 'ok');
      const again = acquired(
        await store.reserve(s.input({ fingerprint: 'fingerprint-b' })),
        'after retention',
      );
      assert.equal(again.created, false);
      assert.equal(again.record.response, null);
      assert.equal(again.record.fingerprint, 'fingerprint-b');
    },
  },
  {
    name: 'tombstones: past its ttl, a key reserved with tombstoneMs is expired (no response) and taken by nobody',
    async run(store, s) {
      const old = await held(store, s.input({ tombstoneMs: KEEP_MS }), 'old');
      assert.equal(await completeAs(store, old, 0), 'ok');
      for (const fingerprint of [old.fingerprint, 'fingerprint-b']) {
        const tombstone = existing(await store.reserve(s.input({ fingerprint })), 'tombstone');
        assert.equal(tombstone.record.state, 'expired');
        assert.equal(tombstone.record.response, null);
        assert.equal(tombstone.record.fingerprint, old.fingerprint);
      }
      const found = await store.lookup(identity(old));
      assert.equal(found?.record.state, 'expired');
      assert.equal(found?.writable, false);
      const insert = {
        ...identity(old),
        fingerprint: old.fingerprint,
        response: RESPONSE,
        ttlMs: KEEP_MS,
      };
      assert.equal(await store.transaction((tx) => store.insertCompleted(tx, insert)), 'conflict');
    },
  },
  {
    name: 'unknown keys: lookup finds nothing, and no holder write succeeds',
    async run(store, s) {
      const id = identity(s.input());
      assert.equal(await store.lookup(id), undefined);
      assert.equal(await store.isCompletedBy(id, s.token()), false);
      for (const [write, result] of await holderWrites(store, id, s.token())) {
        assert.equal(result, 'lost', `${write} on a key that does not exist`);
      }
      assert.equal(await store.lookup(id), undefined, 'holder writes never create a key');
    },
  },
  {
    name: 'lookup: writable for released keys, expired responses and expired leases with nothing committed; not for live ones',
    async run(store, s) {
      const live = await held(store, s.input({ key: s.key('live') }), 'live');
      assert.equal((await store.lookup(identity(live)))?.writable, false, 'a live lease');
      const expiredLease = await held(
        store,
        s.input({ key: s.key('expired-lease'), leaseMs: 0 }),
        'expired lease',
      );
      assert.equal(
        (await store.lookup(identity(expiredLease)))?.writable,
        true,
        'an expired lease',
      );
      const released = await held(store, s.input({ key: s.key('released') }), 'released');
      await store.release(identity(released), released.ownerToken);
      assert.equal((await store.lookup(identity(released)))?.writable, true, 'a released key');
      const expired = await held(
        store,
        s.input({ key: s.key('expired-response') }),
        'expired response',
      );
      await completeAs(store, expired, 0);
      assert.equal((await store.lookup(identity(expired)))?.writable, true, 'an expired response');
      const kept = await held(store, s.input({ key: s.key('kept-response') }), 'kept response');
      await completeAs(store, kept);
      const found = await store.lookup(identity(kept));
      assert.equal(found?.writable, false, 'a response within its retention');
      assert.deepEqual(found?.record.response, RESPONSE);
    },
  },
  {
    name: "insertCompleted: the key is stored completed in the caller's transaction, or not at all",
    async run(store, s) {
      const input = {
        ...identity(s.input()),
        fingerprint: 'fingerprint-a',
        response: RESPONSE,
        ttlMs: KEEP_MS,
      };
      const rollback = new Error('business write failed');
      await assert.rejects(
        store.transaction(async (tx) => {
          assert.equal(await store.insertCompleted(tx, input), 'inserted');
          throw rollback;
        }),
        (error) => error === rollback,
      );
      assert.equal(await store.lookup(input), undefined, 'rolled back with the transaction');
      await store.transaction(async (tx) => {
        assert.equal(await store.insertCompleted(tx, input), 'inserted');
      });
      const found = await store.lookup(input);
      assert.equal(found?.record.state, 'completed');
      assert.equal(found?.writable, false);
      assert.deepEqual(found?.record.response, RESPONSE);
      const replay = existing(await store.reserve(s.input()), 'a leased reservation of it');
      assert.deepEqual(replay.record.response, RESPONSE);
    },
  },
  {
    name: 'insertCompleted: concurrent transactions for one key insert it once; the rest conflict',
    async run(store, s) {
      const input = {
        ...identity(s.input()),
        fingerprint: 'fingerprint-a',
        response: RESPONSE,
        ttlMs: KEEP_MS,
      };
      // As the engine does: a transaction whose insert met a conflict rolls back (under
      // REPEATABLE READ or SERIALIZABLE the server has already rolled it back).
      const rolledBack = new Error('conflict: rolled back');
      const results = await Promise.all(
        Array.from({ length: 8 }, () =>
          store
            .transaction(async (tx) => {
              const result = await store.insertCompleted(tx, input);
              if (result === 'conflict') throw rolledBack;
              return result;
            })
            .catch((error) => (error === rolledBack ? 'conflict' : Promise.reject(error))),
        ),
      );
      assert.deepEqual([...results].sort(), [
        'conflict',
        'conflict',
        'conflict',
        'conflict',
        'conflict',
        'conflict',
        'conflict',
        'inserted',
      ]);
    },
  },
  {
    name: "reserve: with a rate limit, new keys beyond the principal's cap are refused and nothing is written",
    async run(store, s) {
      const rateLimit = { maxNewKeys: 2, windowMs: LONG_WINDOW_MS };
      const mine = (key: string, principal = 'shopper-1') =>
        s.input({ key: s.key(key), principal: `${s.tenant()}-${principal}`, rateLimit });
      acquired(await store.reserve(mine('1')), 'first new key');
      acquired(await store.reserve(mine('2')), 'second new key');
      const refused = await store.reserve(mine('3'));
      assert.equal(refused.kind, 'rate_limited', 'third new key');
      assert.ok(
        (refused as { retryAfterSeconds: number }).retryAfterSeconds > 0,
        'retryAfterSeconds',
      );
      assert.equal(
        await store.lookup(identity(mine('3'))),
        undefined,
        'a refused key is not written',
      );
      existing(await store.reserve(mine('1')), 'a known key is answered, not counted');
      acquired(
        await store.reserve(mine('4', 'shopper-2')),
        'another principal has its own allowance',
      );
    },
  },
  {
    name: 'reserve: with a rate limit, concurrent reservations of one new key acquire it once and count it once',
    async run(store, s) {
      const rateLimit = { maxNewKeys: 2, windowMs: LONG_WINDOW_MS };
      const mine = (key: string) => s.input({ key: s.key(key), rateLimit });
      const results = await Promise.all(Array.from({ length: 16 }, () => store.reserve(mine('1'))));
      const kinds = results.map((r) => r.kind);
      assert.equal(kinds.filter((k) => k === 'acquired').length, 1, `racing: ${kinds.join(',')}`);
      assert.ok(
        kinds.every((k) => k === 'acquired' || k === 'existing'),
        `racing: ${kinds.join(',')}`,
      );
      acquired(await store.reserve(mine('2')), 'the second new key fits the cap of 2');
      assert.equal((await store.reserve(mine('3'))).kind, 'rate_limited', 'the third new key');
    },
  },
  {
    name: 'countNewKey / peekNewKeys: counts up to the cap, then refuses without counting',
    async run(store, s) {
      const limit = { maxNewKeys: 2, windowMs: LONG_WINDOW_MS };
      const scope = { tenantId: s.tenant(), principal: 'api-key-1' };
      assert.equal(
        (await store.peekNewKeys(scope, limit)).limited,
        false,
        'peek at an empty window',
      );
      assert.equal((await store.countNewKey(scope, limit)).limited, false, 'the first count');
      assert.equal((await store.countNewKey(scope, limit)).limited, false, 'the second count');
      const full = await store.countNewKey(scope, limit);
      assert.equal(full.limited, true, 'the third count');
      assert.equal((await store.peekNewKeys(scope, limit)).limited, true, 'peek at a full window');
      const other = { tenantId: s.tenant('b'), principal: 'api-key-1' };
      assert.equal((await store.peekNewKeys(other, limit)).limited, false, 'another tenant');
    },
  },
  {
    name: 'countNewKey: concurrent counts of one principal never pass the cap together',
    async run(store, s) {
      const limit = { maxNewKeys: 3, windowMs: LONG_WINDOW_MS };
      const scope = { tenantId: s.tenant(), principal: 'api-key-1' };
      const counts = await Promise.all(
        Array.from({ length: 8 }, () => store.countNewKey(scope, limit)),
      );
      assert.equal(counts.filter((c) => !c.limited).length, 3, 'admitted of 8 at once');
    },
  },
  {
    name: 'isTransaction (optional): true for what store.transaction hands out, false for anything else',
    async run(store) {
      if (!store.isTransaction) return;
      const isTransaction = store.isTransaction.bind(store);
      assert.equal(
        await store.transaction(async (tx) => isTransaction(tx)),
        true,
        'a transaction of the store',
      );
      assert.equal(isTransaction(undefined as never), false, 'no executor');
      assert.equal(isTransaction({} as never), false, 'a plain object');
    },
  },
  {
    name: 'claimResumable (optional): only an expired lease with a committed phase under resume is claimed, as a takeover; its old holder is fenced off',
    async run(store, s) {
      if (!store.claimResumable) return;
      const operation = s.tenant('completer');
      const committed = async (name: string, overrides: Partial<ReserveInput>) => {
        const input = await held(
          store,
          s.input({ operation, key: s.key(name), ...overrides }),
          name,
        );
        const data = { rideId: name };
        assert.equal(
          await store.advance(undefined, identity(input), input.ownerToken, 'charged', data),
          'ok',
        );
        return input;
      };
      await committed('live', {});
      await committed('parks-unknown', { leaseMs: 0, onExpiredLease: 'unknown' });
      await held(
        store,
        s.input({ operation, key: s.key('nothing-committed'), leaseMs: 0 }),
        'fresh',
      );
      const old = await committed('left', { leaseMs: 0 });
      const claim = (ownerToken: string, graceMs = 0) =>
        store.claimResumable?.({ operation, ownerToken, leaseMs: LIVE_LEASE_MS, graceMs });
      assert.equal(await claim(s.token(), KEEP_MS), undefined, 'a lease not ended graceMs ago');
      const token = s.token();
      const claimed = await claim(token);
      assert.deepEqual(claimed?.id, identity(old), 'the one key left for resumption');
      assert.equal(claimed?.record.ownerToken, token);
      assert.equal(claimed?.record.recoveryPoint, 'charged');
      assert.deepEqual(claimed?.record.recoveryData, { rideId: 'left' });
      assert.equal(claimed?.record.fingerprint, old.fingerprint);
      assert.ok(claimed && (claimed.record.lockedUntil ?? 0) > claimed.record.now, 'a live lease');
      assert.equal(await claim(s.token()), undefined, 'nothing else is left for resumption');
      for (const [write, result] of await holderWrites(store, identity(old), old.ownerToken))
        assert.equal(result, 'lost', `${write} by the holder the completer took the key from`);
      assert.equal(existing(await store.reserve(old), 'a retry').record.ownerToken, token);
      assert.equal(await completeAs(store, { ...old, ownerToken: token }), 'ok');
      assert.deepEqual(existing(await store.reserve(old), 'after').record.response, RESPONSE);
    },
  },
  {
    name: 'claimResumable (optional): concurrent claims take each key once',
    async run(store, s) {
      if (!store.claimResumable) return;
      const operation = s.tenant('completers');
      for (const name of ['a', 'b', 'c']) {
        const input = await held(store, s.input({ operation, key: s.key(name), leaseMs: 0 }), name);
        assert.equal(
          await store.advance(undefined, identity(input), input.ownerToken, 'charged', null),
          'ok',
        );
      }
      const claims = await Promise.all(
        Array.from({ length: 8 }, () =>
          store.claimResumable?.({
            operation,
            ownerToken: s.token(),
            leaseMs: LIVE_LEASE_MS,
            graceMs: 0,
          }),
        ),
      );
      const keys = claims.flatMap((c) => (c ? [c.id.key] : [])).sort();
      assert.deepEqual(
        keys,
        ['a', 'b', 'c'].map((name) => s.key(name)),
        'each key claimed once',
      );
    },
  },
  {
    name: 'giveBackNewKey (optional): a count given back frees its place, and no more',
    async run(store, s) {
      if (!store.giveBackNewKey) return;
      const limit = { maxNewKeys: 1, windowMs: LONG_WINDOW_MS };
      const scope = { tenantId: s.tenant(), principal: 'api-key-1' };
      assert.equal((await store.countNewKey(scope, limit)).limited, false, 'the first count');
      assert.equal((await store.countNewKey(scope, limit)).limited, true, 'the window is full');
      await store.giveBackNewKey(scope, limit);
      await store.giveBackNewKey(scope, limit);
      assert.equal(
        (await store.countNewKey(scope, limit)).limited,
        false,
        'given back: room again',
      );
      assert.equal((await store.countNewKey(scope, limit)).limited, true, 'never below zero');
    },
  },
];
