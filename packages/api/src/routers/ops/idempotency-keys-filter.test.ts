import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';
import { refusal } from '../../testing/refusal.ts';

// The cockpit's key list filtered by the library's states, tombstones (`expired`) included: an
// operator looking for why a retry was answered 409 key expired finds its key among them.
describe('ops.idempotencyKeys by state', () => {
  let h: ApiTestHarness;
  const keys = { completed: randomUUID(), expired: randomUUID() };
  beforeAll(async () => {
    h = await createApiTestHarness('api_keys_filter');
    for (const key of Object.values(keys)) {
      const { api } = h.caller({ ...bearer('tenant_a'), 'idempotency-key': key });
      await api.checkout.pay({ lines: [{ productId: 'book_ddia', quantity: 1 }] });
    }
    // What the reaper leaves of a key past its retention: fingerprint and status, no answer.
    await h.database.client.sql`
      update idempotency_keys set state = 'expired', response_body = null, response_headers = null
      where key = ${keys.expired}`;
  });
  afterAll(async () => {
    await h.drop();
  });

  it('lists only the keys in the state asked for, expired ones too; all without one', async () => {
    const { api } = h.caller(bearer('tenant_a'));
    const listed = async (state?: 'completed' | 'expired') =>
      (await api.ops.idempotencyKeys(state ? { state } : undefined)).map((k) => k.key);
    expect(await listed('expired')).toEqual([keys.expired]);
    expect(await listed('completed')).toEqual([keys.completed]);
    expect((await listed()).sort()).toEqual(Object.values(keys).sort());
    // Another merchant's filter still sees only its own keys.
    expect(
      await h.caller(bearer('tenant_b')).api.ops.idempotencyKeys({ state: 'expired' }),
    ).toEqual([]);
  });

  it('refuses a state the library does not have', async () => {
    const { api } = h.caller(bearer('tenant_a'));
    const error = await refusal(api.ops.idempotencyKeys({ state: 'deleted' as 'expired' }));
    expect(error.code).toBe('invalid_input');
  });
});
