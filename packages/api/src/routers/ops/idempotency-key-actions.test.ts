import { randomUUID } from 'node:crypto';
import type { IdempotencyEvent } from '@once/idempotency';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';
import { refusal } from '../../testing/refusal.ts';

describe('ops.idempotencyKey / releaseIdempotencyKey / evictIdempotencyKey', () => {
  let h: ApiTestHarness;
  let key: string;
  const events: IdempotencyEvent[] = [];
  beforeAll(async () => {
    h = await createApiTestHarness('api_key_actions', {
      onIdempotencyEvent: (event) => events.push(event),
    });
    key = randomUUID();
    await h
      .caller({ ...bearer('tenant_a'), 'idempotency-key': key })
      .api.checkout.pay({ lines: [{ productId: 'book_sre', quantity: 1 }] });
  });
  afterAll(async () => {
    await h.drop();
  });

  it('shows the tenant’s key without its response body; another tenant sees nothing', async () => {
    const api = h.caller(bearer('tenant_a')).api;
    const seen = await api.ops.idempotencyKey({ operation: 'checkout.pay', key });
    expect(seen).toMatchObject({
      tenantId: 'tenant_a',
      operation: 'checkout.pay',
      key,
      state: 'completed',
      attempts: 1,
      responseStatus: 200,
      releasable: false,
      evictable: true,
    });
    expect(seen).not.toHaveProperty('response');
    expect(seen?.fingerprintPrefix).toHaveLength(12);
    const other = h.caller(bearer('tenant_b')).api;
    expect(await other.ops.idempotencyKey({ operation: 'checkout.pay', key })).toBeNull();
    expect(
      await refusal(
        other.ops.evictIdempotencyKey({
          operation: 'checkout.pay',
          key,
          revision: seen?.revision ?? '',
          reason: 'not mine',
        }),
      ),
    ).toEqual({ trpc: 'NOT_FOUND', code: 'idempotency_key_not_found' });
  });

  it('refuses a stale revision and a forbidden action with stable codes; evicts at the seen revision, audited with the operator and reason', async () => {
    const api = h.caller(bearer('tenant_a')).api;
    const id = { operation: 'checkout.pay', key };
    const seen = await api.ops.idempotencyKey(id);
    const revision = seen?.revision ?? '';
    expect(
      await refusal(api.ops.evictIdempotencyKey({ ...id, revision: 'stale', reason: 'cleanup' })),
    ).toEqual({ trpc: 'CONFLICT', code: 'idempotency_key_changed' });
    expect(
      await refusal(api.ops.releaseIdempotencyKey({ ...id, revision, reason: 'cleanup' })),
    ).toEqual({ trpc: 'CONFLICT', code: 'idempotency_key_not_releasable' });
    expect(
      await refusal(api.ops.evictIdempotencyKey({ ...id, revision, reason: ' ' })),
    ).toMatchObject({ trpc: 'BAD_REQUEST' });
    expect((await api.ops.idempotencyKey(id))?.revision).toBe(revision); // nothing changed

    const entry = await api.ops.evictIdempotencyKey({
      ...id,
      revision,
      reason: 'customer asked to retry',
    });
    expect(entry).toMatchObject({
      action: 'evict',
      fromState: 'completed',
      toState: 'deleted',
      reason: 'customer asked to retry',
      actor: expect.stringMatching(/^api_key:/),
    });
    expect(await api.ops.idempotencyKey(id)).toBeNull();
    // The deployment's event hook hears it too, as it hears the engine.
    expect(events.filter((e) => e.type === 'operator_evicted')).toEqual([
      expect.objectContaining({
        tenantId: 'tenant_a',
        audit: expect.objectContaining({ key, actor: entry.actor }),
      }),
    ]);
    const audit = await h.database.client.sql`
      select tenant_id, action, actor, reason from idempotency_key_audit where key = ${key}`;
    expect(audit).toEqual([
      {
        tenant_id: 'tenant_a',
        action: 'evict',
        actor: entry.actor,
        reason: 'customer asked to retry',
      },
    ]);
  });
});
