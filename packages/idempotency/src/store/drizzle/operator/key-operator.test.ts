import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../../core/engine.ts';
import { AmbiguousOutcomeError } from '../../../core/errors.ts';
import type { IdempotencyEvent, KeyIdentity } from '../../../core/types.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../../testing/test-database.ts';
import { createDrizzleStore } from '../store.ts';
import { createKeyOperator } from './key-operator.ts';
import { isKeyOperatorError, type KeyOperatorErrorCode } from './key-operator-error.ts';

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('key_operator', 12);
});
afterAll(async () => {
  await t?.drop();
});

let counter = 0;
const newId = (tenantId = 'tenant_a'): KeyIdentity => ({
  tenantId,
  operation: 'checkout.pay',
  key: `op-${++counter}`,
});
const engine = () => createIdempotency({ store: createDrizzleStore(t.db) });
const FINGERPRINT = 'ab'.repeat(32);
const ok = () => Promise.resolve({ status: 201, headers: {}, body: '{"card":"4242"}' });

async function completedKey(id = newId()) {
  await engine().execute({ ...id, fingerprint: FINGERPRINT }, ok);
  return id;
}

/** A key whose holder died: reserved, then its lease ran out (moved into the past). */
async function expiredLease(id = newId(), recoveryPoint = 'started') {
  const execution = engine().execute(
    { ...id, fingerprint: FINGERPRINT, policy: { heartbeat: false } },
    () => new Promise(() => {}), // never returns: the holder "hangs"
  );
  void execution;
  await waitFor(
    async () => (await t.sql`select 1 from idempotency_keys where key = ${id.key}`).length > 0,
  );
  await t.sql`update idempotency_keys set locked_until = now() - interval '1 second',
    recovery_point = ${recoveryPoint} where key = ${id.key}`;
  return id;
}

async function waitFor(condition: () => Promise<boolean>) {
  for (let i = 0; i < 200; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition never held');
}

async function refusedWith(promise: Promise<unknown>): Promise<KeyOperatorErrorCode> {
  try {
    await promise;
  } catch (error) {
    if (isKeyOperatorError(error)) return error.code;
    throw error;
  }
  throw new Error('expected a KeyOperatorError');
}

const auditRows = (id: KeyIdentity) =>
  t.sql`select action, actor, reason, from_state, to_state, recovery_point, attempts
    from idempotency_key_audit where tenant_id = ${id.tenantId} and key = ${id.key} order by id`;
const stateOf = async (id: KeyIdentity) =>
  (await t.sql`select state from idempotency_keys where key = ${id.key}`)[0]?.state as
    | string
    | undefined;

describe('createKeyOperator: inspection', () => {
  it('lists one tenant newest first and inspects a key without its response body unless asked', async () => {
    const operator = createKeyOperator(t.db);
    const id = await completedKey();
    await completedKey(newId('tenant_b'));
    const listed = await operator.list({ tenantId: 'tenant_a', keyPrefix: id.key });
    expect(listed).toHaveLength(1);
    const [summary] = listed;
    expect(summary).toMatchObject({
      ...id,
      state: 'completed',
      recoveryPoint: 'started',
      attempts: 1,
      leaseOwner: expect.stringMatching(/^[0-9a-f-]{8}$/),
      leaseExpired: false,
      responseStatus: 201,
      fingerprintPrefix: FINGERPRINT.slice(0, 12),
      releasable: false,
      evictable: true,
    });
    expect(summary).not.toHaveProperty('response');
    expect(JSON.stringify(summary)).not.toContain('4242');
    expect(summary?.expiresAt.getTime()).toBeGreaterThan(Date.now());
    expect(await operator.list({ tenantId: 'tenant_b', keyPrefix: id.key })).toHaveLength(0);

    const details = await operator.inspect(id, { includeResponse: true });
    expect(details?.response).toEqual({
      status: 201,
      headers: {},
      body: '{"card":"4242"}',
      keyId: null,
    });
    expect(await operator.inspect({ ...id, key: 'nope' })).toBeUndefined();

    const held = await expiredLease();
    const running = await operator.inspect(held);
    expect(running?.leaseOwner).toHaveLength(8);
    expect(running).toMatchObject({ state: 'in_progress', leaseExpired: true, releasable: true });
  });

  it('refuses bad input with invalid_input, reading nothing', async () => {
    const operator = createKeyOperator(t.db);
    expect(await refusedWith(operator.list({ tenantId: 'tenant_a', limit: 0 }))).toBe(
      'invalid_input',
    );
    expect(await refusedWith(operator.list({ tenantId: '' }))).toBe('invalid_input');
  });
});

describe('createKeyOperator: release and evict', () => {
  it('releases an expired lease that committed nothing, audited in the table and the event hook; the next request runs', async () => {
    const events: IdempotencyEvent[] = [];
    const operator = createKeyOperator(t.db, { onEvent: (e) => events.push(e) });
    const id = await expiredLease();
    const seen = await operator.inspect(id);
    const entry = await operator.release(id, {
      revision: seen?.revision ?? '',
      actor: 'ops:alice',
      reason: 'worker died before charging (INC-42)',
    });
    expect(entry).toMatchObject({
      action: 'release',
      fromState: 'in_progress',
      toState: 'released',
    });
    expect(await stateOf(id)).toBe('released');
    expect(await auditRows(id)).toEqual([
      {
        action: 'release',
        actor: 'ops:alice',
        reason: 'worker died before charging (INC-42)',
        from_state: 'in_progress',
        to_state: 'released',
        recovery_point: 'started',
        attempts: 1,
      },
    ]);
    expect(events).toEqual([
      expect.objectContaining({
        type: 'operator_released',
        tenantId: id.tenantId,
        operation: id.operation,
        audit: expect.objectContaining({ key: id.key, actor: 'ops:alice' }),
      }),
    ]);
    const retry = await engine().execute({ ...id, fingerprint: FINGERPRINT }, ok);
    expect(retry.kind).toBe('executed');
  });

  it('releases an unknown key only as an audited decision; evicts a completed key so that its next request runs again', async () => {
    const operator = createKeyOperator(t.db);
    const unknown = newId();
    await engine()
      .execute({ ...unknown, fingerprint: FINGERPRINT }, () => {
        throw new AmbiguousOutcomeError();
      })
      .catch(() => {});
    const seenUnknown = await operator.inspect(unknown);
    expect(seenUnknown).toMatchObject({ state: 'unknown', releasable: true, evictable: false });
    expect(
      await refusedWith(
        operator.evict(unknown, { revision: seenUnknown?.revision ?? '', actor: 'a', reason: 'r' }),
      ),
    ).toBe('key_not_evictable');
    await operator.release(unknown, {
      revision: seenUnknown?.revision ?? '',
      actor: 'ops:bob',
      reason: 'processor ledger shows no charge',
    });
    expect(await stateOf(unknown)).toBe('released');

    const done = await completedKey();
    const seenDone = await operator.inspect(done);
    expect(
      await refusedWith(
        operator.release(done, { revision: seenDone?.revision ?? '', actor: 'a', reason: 'r' }),
      ),
    ).toBe('key_not_releasable');
    const entry = await operator.evict(done, {
      revision: seenDone?.revision ?? '',
      actor: 'ops:bob',
      reason: 'stored decline; card fixed',
    });
    expect(entry).toMatchObject({
      fromState: 'completed',
      toState: 'deleted',
      responseStatus: 201,
    });
    expect(await stateOf(done)).toBeUndefined();
    expect((await engine().execute({ ...done, fingerprint: 'other' }, ok)).kind).toBe('executed');
    expect((await auditRows(done)).map((r) => r.action)).toEqual(['evict']);
  });

  it('never releases a live lease or an expired lease with a committed phase, nor evicts a running key', async () => {
    const operator = createKeyOperator(t.db);
    const live = newId();
    let finish!: () => void;
    const running = engine().execute({ ...live, fingerprint: FINGERPRINT }, async () => {
      await new Promise<void>((resolve) => {
        finish = resolve;
      });
      return { status: 200, headers: {}, body: null };
    });
    await waitFor(async () => (await stateOf(live)) === 'in_progress');
    const seenLive = await operator.inspect(live);
    const input = { revision: seenLive?.revision ?? '', actor: 'a', reason: 'r' };
    expect(await refusedWith(operator.release(live, input))).toBe('key_not_releasable');
    expect(await refusedWith(operator.evict(live, input))).toBe('key_not_evictable');

    const phased = await expiredLease(newId(), 'charged');
    const seenPhased = await operator.inspect(phased);
    expect(seenPhased?.releasable).toBe(false);
    expect(
      await refusedWith(
        operator.release(phased, { revision: seenPhased?.revision ?? '', actor: 'a', reason: 'r' }),
      ),
    ).toBe('key_not_releasable');
    expect(await auditRows(live)).toHaveLength(0);
    expect(await auditRows(phased)).toHaveLength(0);
    finish();
    await running;
  });

  it('refuses with key_changed when the key moved on since the operator read it (a retry took the lease over), changing nothing', async () => {
    const operator = createKeyOperator(t.db);
    const id = await expiredLease();
    const seen = await operator.inspect(id);
    // Meanwhile a retry takes the expired lease over (new owner, one more attempt).
    let finish!: () => void;
    const retry = engine().execute({ ...id, fingerprint: FINGERPRINT }, async () => {
      await new Promise<void>((resolve) => {
        finish = resolve;
      });
      return { status: 200, headers: {}, body: null };
    });
    await waitFor(async () => (await operator.inspect(id))?.attempts === 2);
    const input = { revision: seen?.revision ?? '', actor: 'ops:alice', reason: 'stale view' };
    expect(await refusedWith(operator.release(id, input))).toBe('key_changed');
    expect(await stateOf(id)).toBe('in_progress');
    expect(await auditRows(id)).toHaveLength(0);
    finish();
    expect((await retry).kind).toBe('executed');
    // The finished key has a new revision too: the old view cannot evict it either.
    expect(await refusedWith(operator.evict(id, input))).toBe('key_changed');
    expect(await refusedWith(operator.evict({ ...id, key: 'missing' }, input))).toBe(
      'key_not_found',
    );
    expect(await refusedWith(operator.evict(id, { ...input, reason: ' ' }))).toBe('invalid_input');
  });

  it('of two operators acting on the same view at once, exactly one acts and one audit row is written', async () => {
    const operator = createKeyOperator(t.db);
    for (let round = 0; round < 10; round++) {
      const id = await completedKey();
      const seen = await operator.inspect(id);
      const input = { revision: seen?.revision ?? '', actor: 'ops', reason: 'race' };
      const results = await Promise.allSettled([
        operator.evict(id, { ...input, actor: 'ops:1' }),
        operator.evict(id, { ...input, actor: 'ops:2' }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(isKeyOperatorError(rejected.reason, 'key_not_found')).toBe(true);
      expect(await auditRows(id)).toHaveLength(1);
    }
  });
});
