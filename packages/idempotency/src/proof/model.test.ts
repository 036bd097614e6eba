import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideForExistingKey } from '../core/decision.ts';
import type { IdempotencyStore, KeyIdentity, KeyState } from '../core/types.ts';
import { reapExpiredKeys } from '../store/drizzle/reaper.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import { sweepExpiredLeases } from '../store/drizzle/sweeper.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

/** The reference model: what the store must hold for each key, written as plainly as possible. */
interface ModelKey {
  state: KeyState;
  fingerprint: string;
  owner: string | null;
  recoveryPoint: string;
  policy: 'resume' | 'unknown';
  leaseExpired: boolean;
  ttlExpired: boolean;
  body: string | null;
}
interface Model {
  keys: Map<string, ModelKey>;
  holders: Array<{ key: string; token: string }>;
}
interface Real {
  store: IdempotencyStore<unknown>;
  t: IdempotencyTestDatabase;
}

const KEYS = ['k0', 'k1', 'k2'];
const id = (key: string): KeyIdentity => ({ tenantId: 'tenant', operation: 'op', key });
let tokens = 0;

async function assertSameState(model: Model, real: Real) {
  const rows = await real.t
    .sql`select key, state, fingerprint, owner_token, recovery_point, response_body,
    (locked_until <= now()) as lease_expired, (expires_at <= now()) as ttl_expired from idempotency_keys order by key`;
  const expected = [...model.keys.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, m]) => ({
      key,
      state: m.state,
      fingerprint: m.fingerprint,
      owner_token: m.state === 'in_progress' || m.state === 'completed' ? m.owner : null,
      recovery_point: m.recoveryPoint,
      response_body: m.state === 'completed' ? m.body : null,
      lease_expired: m.state === 'in_progress' ? m.leaseExpired : null,
      ttl_expired: m.ttlExpired,
    }));
  expect(rows.map((r) => ({ ...r }))).toEqual(expected);
}

type Cmd = fc.AsyncCommand<Model, Real>;
const cmd = (
  name: string,
  run: (m: Model, r: Real) => Promise<void>,
  check: (m: Readonly<Model>) => boolean = () => true,
): Cmd => ({
  check,
  async run(m, r) {
    await run(m, r);
    await assertSameState(m, r);
  },
  toString: () => name,
});

function reserve(key: string, fingerprint: string, policy: 'resume' | 'unknown'): Cmd {
  return cmd(`reserve(${key},${fingerprint},${policy})`, async (m, r) => {
    const token = `tok-${++tokens}`;
    const result = await r.store.reserve({
      ...id(key),
      fingerprint,
      ownerToken: token,
      leaseMs: 60_000,
      ttlMs: 3_600_000,
      onExpiredLease: policy,
      rateLimit: undefined,
    });
    const current = m.keys.get(key);
    const fresh = (): ModelKey => ({
      state: 'in_progress',
      fingerprint,
      owner: token,
      recoveryPoint: 'started',
      policy,
      leaseExpired: false,
      ttlExpired: false,
      body: null,
    });
    if (
      !current ||
      current.state === 'released' ||
      (current.state === 'completed' && current.ttlExpired)
    ) {
      expect(result.kind).toBe('acquired');
      m.keys.set(key, fresh());
      m.holders.push({ key, token });
      return;
    }
    if (
      current.state === 'in_progress' &&
      current.leaseExpired &&
      current.fingerprint === fingerprint
    ) {
      if (current.recoveryPoint !== 'started' && current.policy === 'unknown') {
        expect(result.kind).toBe('existing');
        m.keys.set(key, { ...current, state: 'unknown', owner: null, ttlExpired: false });
        return;
      }
      expect(result).toMatchObject({ kind: 'acquired', takenOver: true });
      m.keys.set(key, { ...current, owner: token, leaseExpired: false, ttlExpired: false });
      m.holders.push({ key, token });
      return;
    }
    expect(result.kind).toBe('existing');
    if (result.kind !== 'existing') return;
    const decision = decideForExistingKey(result.record, fingerprint).kind;
    const expected =
      current.fingerprint !== fingerprint
        ? 'reused'
        : current.state === 'completed'
          ? 'replay'
          : current.state === 'unknown'
            ? 'unknown'
            : 'in_use';
    expect(decision).toBe(expected);
  });
}

/**
 * Atomic mode: the read-only lookup, then the completed key inserted inside a transaction.
 * Writable rows are exactly the ones the reservation would take (minus a phase-committed
 * lease); an in-progress row under another fingerprint is never overwritten.
 */
function atomicComplete(key: string, fingerprint: string, body: string): Cmd {
  return cmd(`atomicComplete(${key},${fingerprint},${body})`, async (m, r) => {
    const current = m.keys.get(key);
    const writable =
      !!current &&
      (current.state === 'released' ||
        (current.state === 'completed' && current.ttlExpired) ||
        (current.state === 'in_progress' &&
          current.leaseExpired &&
          current.recoveryPoint === 'started'));
    const found = await r.store.lookup(id(key));
    expect(found?.writable).toBe(current ? writable : undefined);
    const result = await r.store.transaction((tx) =>
      r.store.insertCompleted(tx, {
        ...id(key),
        fingerprint,
        response: { status: 200, headers: {}, body },
        ttlMs: 3_600_000,
      }),
    );
    const overwrite =
      !current ||
      (writable && (current.state !== 'in_progress' || current.fingerprint === fingerprint));
    expect(result).toBe(overwrite ? 'inserted' : 'conflict');
    if (!overwrite) return;
    m.keys.set(key, {
      state: 'completed',
      fingerprint,
      owner: null,
      recoveryPoint: 'started',
      policy: current?.policy ?? 'resume',
      leaseExpired: false,
      ttlExpired: false,
      body,
    });
  });
}

/** A holder-only write: 'ok' iff the model says this token holds the key (and `extra` allows it). */
function holderWrite(
  name: string,
  index: number,
  write: (r: Real, key: string, token: string) => Promise<string>,
  apply: (k: ModelKey) => ModelKey,
  extra: (k: ModelKey) => boolean = () => true,
): Cmd {
  return cmd(
    `${name}(holder ${index})`,
    async (m, r) => {
      const holder = m.holders[index % m.holders.length];
      if (!holder) return;
      const k = m.keys.get(holder.key);
      const holds = !!k && k.state === 'in_progress' && k.owner === holder.token;
      const result = await write(r, holder.key, holder.token);
      if (holds && k && extra(k)) {
        expect(result).toBe('ok');
        m.keys.set(holder.key, apply(k));
      } else {
        const finished = !!k && k.state === 'completed' && k.owner === holder.token;
        expect(result).toBe(
          name === 'complete' || name === 'advance' ? 'lost' : finished ? 'finished' : 'lost',
        );
      }
    },
    (m) => m.holders.length > 0,
  );
}

function sqlOnKey(
  name: string,
  key: string,
  statement: (r: Real) => Promise<unknown>,
  apply: (k: ModelKey) => ModelKey,
): Cmd {
  return cmd(`${name}(${key})`, async (m, r) => {
    await statement(r);
    const k = m.keys.get(key);
    if (k) m.keys.set(key, apply(k));
  });
}

const commands = [
  fc
    .tuple(
      fc.constantFrom(...KEYS),
      fc.constantFrom('fa', 'fb'),
      fc.constantFrom('resume' as const, 'unknown' as const),
    )
    .map(([k, f, p]) => reserve(k, f, p)),
  fc
    .tuple(fc.constantFrom(...KEYS), fc.constantFrom('fa', 'fb'), fc.constantFrom('"x"', '"y"'))
    .map(([k, f, body]) => atomicComplete(k, f, body)),
  fc.tuple(fc.nat(), fc.constantFrom('"a"', '"b"')).map(([i, body]) =>
    holderWrite(
      'complete',
      i,
      (r, key, token) =>
        r.store.complete(undefined, id(key), token, { status: 200, headers: {}, body }, 3_600_000),
      (k) => ({
        ...k,
        state: 'completed',
        body,
        ttlExpired: false,
      }),
    ),
  ),
  fc.tuple(fc.nat(), fc.constantFrom('p1', 'p2')).map(([i, point]) =>
    holderWrite(
      'advance',
      i,
      (r, key, token) => r.store.advance(undefined, id(key), token, point, null),
      (k) => ({ ...k, recoveryPoint: point }),
    ),
  ),
  fc.nat().map((i) =>
    holderWrite(
      'release',
      i,
      (r, key, token) => r.store.release(id(key), token),
      (k) => ({ ...k, state: 'released', owner: null, recoveryPoint: 'started' }),
      (k) => k.recoveryPoint === 'started',
    ),
  ),
  fc.nat().map((i) =>
    holderWrite(
      'endLease',
      i,
      (r, key, token) => r.store.endLease(id(key), token),
      (k) => ({ ...k, leaseExpired: true }),
    ),
  ),
  fc.nat().map((i) =>
    holderWrite(
      'markUnknown',
      i,
      (r, key, token) => r.store.markUnknown(id(key), token),
      (k) => ({ ...k, state: 'unknown', owner: null }),
    ),
  ),
  fc.nat().map((i) =>
    holderWrite(
      'renew',
      i,
      (r, key, token) => r.store.renew(id(key), token, 60_000),
      (k) => ({ ...k, leaseExpired: false }),
    ),
  ),
  fc.constantFrom(...KEYS).map((key) =>
    sqlOnKey(
      'expireLease',
      key,
      (r) =>
        r.t
          .sql`update idempotency_keys set locked_until = now() - interval '1 second' where key = ${key} and state = 'in_progress'`,
      (k) => (k.state === 'in_progress' ? { ...k, leaseExpired: true } : k),
    ),
  ),
  fc.constantFrom(...KEYS).map((key) =>
    sqlOnKey(
      'expireTtl',
      key,
      (r) =>
        r.t
          .sql`update idempotency_keys set expires_at = now() - interval '1 second' where key = ${key}`,
      (k) => ({ ...k, ttlExpired: true }),
    ),
  ),
  fc.constant(
    cmd('reap', async (m, r) => {
      const { deleted } = await reapExpiredKeys(r.t.db, { batchSize: 2 });
      let expected = 0;
      for (const [key, k] of m.keys) {
        if ((k.state === 'completed' || k.state === 'released') && k.ttlExpired) {
          m.keys.delete(key);
          expected++;
        }
      }
      expect(deleted).toBe(expected);
    }),
  ),
  fc.constant(
    cmd('claimResumable', async (m, r) => {
      const token = `tok-${++tokens}`;
      const claimed = await r.store.claimResumable?.({
        operation: 'op',
        ownerToken: token,
        leaseMs: 60_000,
        graceMs: 0,
      });
      const resumable = [...m.keys].filter(
        ([, k]) =>
          k.state === 'in_progress' &&
          k.leaseExpired &&
          k.recoveryPoint !== 'started' &&
          k.policy === 'resume',
      );
      const key = claimed?.id.key ?? '';
      const k = m.keys.get(key);
      // Which of them is the store's to pick (the oldest lease); that it is one is the model's.
      if (resumable.length === 0) expect(claimed).toBeUndefined();
      else expect(key).toBeOneOf(resumable.map(([name]) => name));
      if (!k) return;
      m.keys.set(key, { ...k, owner: token, leaseExpired: false });
      m.holders.push({ key, token });
    }),
  ),
  fc.constant(
    cmd('sweep', async (m, r) => {
      const result = await sweepExpiredLeases(r.t.db, { batchSize: 2 });
      let released = 0;
      let markedUnknown = 0;
      for (const [key, k] of m.keys) {
        if (k.state !== 'in_progress' || !k.leaseExpired) continue;
        if (k.recoveryPoint === 'started') {
          m.keys.set(key, { ...k, state: 'released', owner: null });
          released++;
        } else if (k.policy === 'unknown') {
          m.keys.set(key, { ...k, state: 'unknown', owner: null });
          markedUnknown++;
        }
      }
      expect({ released: result.released, markedUnknown: result.markedUnknown }).toEqual({
        released,
        markedUnknown,
      });
    }),
  ),
];

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('model');
});
afterAll(async () => {
  await t?.drop();
});

describe('model-based: the Postgres store never disagrees with the reference model', () => {
  it('random interleavings of reserve/atomic complete/complete/advance/release/endLease/unknown/renew/lease expiry/TTL expiry/reap/sweep/completer claim', async () => {
    const store = createDrizzleStore(t.db) as IdempotencyStore<unknown>;
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 40 }), async (cmds) => {
        await t.sql`truncate idempotency_keys`;
        await fc.asyncModelRun(
          () => ({ model: { keys: new Map(), holders: [] }, real: { store, t } }),
          cmds,
        );
      }),
      { numRuns: 150 },
    );
  }, 120_000);
});
