import { randomUUID } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readApiEnv } from '../../api-env.ts';
import { createApiDependencies } from '../../dependencies.ts';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';

describe('checkout.pay under the per-tenant new-key rate limit', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    // Configured the way the web app does it: from the environment.
    h = await createApiTestHarness('api_pay_rate_limit', {
      env: { ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '2' },
    });
  });
  afterAll(async () => {
    await h.drop();
  });

  const cart = { lines: [{ productId: 'book_sre', quantity: 1 }] };

  async function counts() {
    const [row] = await h.database.client.sql<
      { payments: number; jobs: number; keys: number }[]
    >`select (select count(*)::int from payments where tenant_id = 'tenant_a') as payments,
             (select count(*)::int from outbox_jobs where tenant_id = 'tenant_a') as jobs,
             (select count(*)::int from idempotency_keys where tenant_id = 'tenant_a') as keys`;
    return row!;
  }

  it('answers 429 with Retry-After for the third new key in a minute and writes nothing', async () => {
    expect(h.deps.maxNewKeysPerMinute).toBe(2);
    // A burst of the cap, then one more per 30 s (the window over the cap): no minute
    // boundary lets the third through, so no waiting for a fresh minute.
    const firstKey = randomUUID();
    const first = h.caller({ ...bearer('tenant_a'), 'idempotency-key': firstKey });
    const paid = await first.api.checkout.pay(cart);
    await h
      .caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() })
      .api.checkout.pay(cart);
    const before = await counts();
    expect(before).toEqual({ payments: 2, jobs: 2, keys: 2 });

    const third = h.caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() });
    const error = await third.api.checkout.pay(cart).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCError);
    expect((error as TRPCError).code).toBe('TOO_MANY_REQUESTS');
    expect((error as TRPCError & { cause: { code: string } }).cause.code).toBe(
      'idempotency_rate_limited',
    );
    const retryAfter = Number(third.resHeaders.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Nothing written: no payment, no job, and the refused key is not stored either.
    expect(await counts()).toEqual(before);

    // A retry of a key that already exists is not a new key: it is replayed, not limited.
    const replay = h.caller({ ...bearer('tenant_a'), 'idempotency-key': firstKey });
    expect(await replay.api.checkout.pay(cart)).toEqual(paid);
    expect(replay.resHeaders.get('idempotent-replayed')).toBe('true');

    // The limit is per tenant: tenant_b still pays.
    const other = h.caller({ ...bearer('tenant_b'), 'idempotency-key': randomUUID() });
    await expect(
      other.api.checkout.pay({ lines: [{ productId: 'mug', quantity: 1 }] }),
    ).resolves.toMatchObject({ status: 'processing' });
  });
});

describe('readApiEnv', () => {
  it('defaults to 600 new keys per minute, 0 disables, garbage refuses to start', () => {
    expect(readApiEnv({}).maxNewKeysPerMinute).toBe(600);
    expect(readApiEnv({ ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '0' }).maxNewKeysPerMinute).toBe(
      0,
    );
    expect(() => readApiEnv({ ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '-1' })).toThrow(
      /whole number/,
    );
    expect(() => readApiEnv({ ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '10/s' })).toThrow();
    expect(
      readApiEnv({ PROCESSOR_URL: 'http://p:4100', PROCESSOR_ADMIN_TOKEN: 'once-admin' }),
    ).toMatchObject({ processorUrl: 'http://p:4100', processorAdminToken: 'once-admin' });
    // No built-in token: a processor URL without one is refused at start.
    expect(() => readApiEnv({ PROCESSOR_URL: 'http://p:4100' })).toThrow(
      /^PROCESSOR_ADMIN_TOKEN is not set: PROCESSOR_URL is/,
    );
  });
});

describe('createApiDependencies new-key window', () => {
  it('refuses a window that is not a whole number of milliseconds >= 1', () => {
    for (const newKeyWindowMs of [0, -5, 1.5, Number.NaN]) {
      expect(() =>
        createApiDependencies({
          db: {} as Parameters<typeof createApiDependencies>[0]['db'],
          sessionSecret: 'a-session-secret-of-16+',
          maxNewKeysPerMinute: 5,
          newKeyWindowMs,
        }),
      ).toThrow(`newKeyWindowMs must be a whole number >= 1, got ${newKeyWindowMs}`);
    }
  });
});
