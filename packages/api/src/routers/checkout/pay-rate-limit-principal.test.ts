import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';
import { refusalOf } from '../../testing/refusal.ts';

/** Start a demo shopper session of a tenant and return its `Cookie` header value. */
async function shopperCookie(h: ApiTestHarness, tenant: string): Promise<string> {
  const start = h.caller();
  await start.api.session.start({ demoTenantId: tenant });
  return start.resHeaders.get('set-cookie')!.split(';')[0]!;
}

/**
 * The allowance slides: a burst of it, then one more key per window / allowance. With the
 * deployed one-minute window and an allowance of 3, one more key fits every 20 s, so a slow run
 * would see its over-the-limit key paid. A week-long window makes the outcome independent of
 * how long the test takes.
 */
const WEEK_MS = 7 * 24 * 60 * 60_000;

const realCart = { lines: [{ productId: 'book_sre', quantity: 1 }] };

describe('checkout.pay new-key limit: per principal, validated keys only, duplicates once', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    // The deployed default allowance (600 new keys per principal), read from the env as web does.
    h = await createApiTestHarness('api_pay_rate_limit_principal', {
      env: {},
      newKeyWindowMs: WEEK_MS,
    });
  });
  afterAll(async () => {
    await h.drop();
  });

  it('600 empty carts from one shopper in a burst leave every payer of the merchant able to pay', async () => {
    expect(h.deps.maxNewKeysPerMinute).toBe(600);
    const attacker = await shopperCookie(h, 'tenant_a');
    // In waves of 50 at once: the whole burst in a few seconds, without starving the test's
    // small connection pool (which would answer 503 and measure the pool, not the limit).
    const refusals: string[] = [];
    for (let wave = 0; wave < 12; wave++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          h
            .caller({ cookie: attacker, 'idempotency-key': randomUUID() })
            .api.checkout.pay({ lines: [] })
            .then(
              () => 'paid',
              (error: unknown) => refusalOf(error).code,
            ),
        ),
      );
      refusals.push(...answers);
    }
    expect(refusals).toHaveLength(600);
    expect(new Set(refusals)).toEqual(new Set(['empty_cart']));

    // Another shopper of the same merchant, and the merchant's own server, still pay.
    const payer = await shopperCookie(h, 'tenant_a');
    await expect(
      h.caller({ cookie: payer, 'idempotency-key': randomUUID() }).api.checkout.pay(realCart),
    ).resolves.toMatchObject({ status: 'processing' });
    await expect(
      h
        .caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() })
        .api.checkout.pay(realCart),
    ).resolves.toMatchObject({ status: 'processing' });
    // Refused input spent nothing: the attacker's own session can still pay a real cart.
    await expect(
      h.caller({ cookie: attacker, 'idempotency-key': randomUUID() }).api.checkout.pay(realCart),
    ).resolves.toMatchObject({ status: 'processing' });
  }, 120_000);
});

describe('checkout.pay new-key limit counts a key once however many duplicates race', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    h = await createApiTestHarness('api_pay_rate_limit_duplicates', {
      env: { ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '3' },
      newKeyWindowMs: WEEK_MS,
    });
  });
  afterAll(async () => {
    await h.drop();
  });

  it('20 concurrent duplicates and their retries spend one new key of the allowance', async () => {
    const key = randomUUID();
    const duplicates = await Promise.all(
      Array.from({ length: 20 }, () =>
        h
          .caller({ ...bearer('tenant_a'), 'idempotency-key': key })
          .api.checkout.pay(realCart)
          .then(
            (result) => result.paymentId,
            (error: unknown) => refusalOf(error).code,
          ),
      ),
    );
    const paymentIds = new Set(duplicates.filter((d) => d.startsWith('pay_')));
    expect(paymentIds.size).toBe(1);
    // Duplicates either replay the payment or are told to retry it; none is rate limited.
    expect(
      duplicates.filter((d) => !d.startsWith('pay_') && d !== 'idempotency_key_in_use'),
    ).toEqual([]);
    // A retry of the now existing key is a replay, not a new key.
    await h.caller({ ...bearer('tenant_a'), 'idempotency-key': key }).api.checkout.pay(realCart);

    // So two more new keys fit the allowance of three, and the third one is refused.
    for (let i = 0; i < 2; i++) {
      await expect(
        h
          .caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() })
          .api.checkout.pay(realCart),
      ).resolves.toMatchObject({ status: 'processing' });
    }
    const over = h.caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() });
    expect(
      await over.api.checkout.pay(realCart).then(
        () => 'paid',
        (error: unknown) => refusalOf(error).code,
      ),
    ).toBe('idempotency_rate_limited');
  }, 60_000);

  it('a concurrent burst of 15 new keys from one API key pays at most its allowance of 3', async () => {
    const answers = await Promise.all(
      Array.from({ length: 15 }, () =>
        h
          .caller({ ...bearer('tenant_b'), 'idempotency-key': randomUUID() })
          .api.checkout.pay({ lines: [{ productId: 'mug', quantity: 1 }] })
          .then(
            () => 'paid',
            (error: unknown) => refusalOf(error).code,
          ),
      ),
    );
    expect(answers.filter((a) => a === 'paid')).toHaveLength(3);
    expect(answers.filter((a) => a !== 'paid')).toEqual(
      Array.from({ length: 12 }, () => 'idempotency_rate_limited'),
    );
    const [row] = await h.database.client.sql<{ payments: number }[]>`
      select count(*)::int as payments from payments where tenant_id = 'tenant_b'`;
    expect(row?.payments).toBe(3);
  }, 60_000);
});
