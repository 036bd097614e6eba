import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { computeFingerprint } from '../../core/fingerprint.ts';
import type { IdempotencyEvent, OperationPolicy } from '../../core/types.ts';
import { refusal } from '../../testing/refusal.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { createDrizzleStore } from './store.ts';

// A stored answer the store cannot decrypt is no store outage: an alert on `store_error` must
// not page for it. It is reported once, as `answer_unreadable`, in every mode.
let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('answer_unreadable_event');
});
afterAll(async () => {
  await t?.drop();
});

const sealedWith = (id: string) => ({ currentKeyId: id, keys: { [id]: randomBytes(32) } });

async function retryUnderAnotherKey(policy: OperationPolicy): Promise<IdempotencyEvent[]> {
  const request = {
    tenantId: 'tenant',
    operation: 'pay',
    key: `unreadable-${Math.random()}`,
    fingerprint: computeFingerprint('pay', {}),
  };
  const run = (encryption: ReturnType<typeof sealedWith>, events: IdempotencyEvent[]) =>
    createIdempotency({
      store: createDrizzleStore(t.db, { encryption }),
      defaults: policy,
      onEvent: (e) => events.push(e),
    }).execute(request, async (exec) => {
      const answer = { status: 201, headers: {}, body: '{"n":1}' };
      if (policy.mode !== 'atomic') return answer;
      return t.db.transaction(async (tx) => {
        await exec.complete(tx, answer);
        return answer;
      });
    });
  await run(sealedWith('k1'), []);
  const events: IdempotencyEvent[] = [];
  expect((await refusal(run(sealedWith('k2'), events))).code).toBe('idempotency_answer_unreadable');
  return events;
}

describe('an answer that cannot be decrypted', () => {
  it.each<[string, OperationPolicy]>([
    ['leased', {}],
    ['atomic, read first', { mode: 'atomic', precheck: true }],
    ['atomic, insert first', { mode: 'atomic', precheck: false }],
  ])('%s: one answer_unreadable event, no store_error', async (_mode, policy) => {
    const events = await retryUnderAnotherKey(policy);
    expect(events.map((e) => e.type).filter((type) => type !== 'created')).toEqual([
      'answer_unreadable',
    ]);
    expect(events[events.length - 1]).toMatchObject({ tenantId: 'tenant', operation: 'pay' });
  });
});
