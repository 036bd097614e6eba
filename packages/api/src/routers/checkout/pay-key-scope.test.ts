import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiTestHarness, createApiTestHarness } from '../../testing/api-test-harness.ts';

/** Start a demo shopper session of a tenant and return its `Cookie` header value. */
async function shopperCookie(h: ApiTestHarness, tenant: string): Promise<string> {
  const start = h.caller();
  await start.api.session.start({ demoTenantId: tenant });
  return start.resHeaders.get('set-cookie')!.split(';')[0]!;
}

const cart = { lines: [{ productId: 'book_sre', quantity: 1 }] };

describe("checkout.pay: a checkout key is the merchant's, whichever session sends it", () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    h = await createApiTestHarness('api_pay_key_scope', { env: {} });
  });
  afterAll(async () => {
    await h.drop();
  });

  it('a retry from a renewed session is answered with the same payment, not 422 (which would invite a second payment)', async () => {
    const key = randomUUID();
    const first = h.caller({ cookie: await shopperCookie(h, 'tenant_a'), 'idempotency-key': key });
    const paid = await first.api.checkout.pay(cart);

    // The shopper's session was renewed (expired, cookie cleared) while the intent kept its key.
    const renewed = h.caller({
      cookie: await shopperCookie(h, 'tenant_a'),
      'idempotency-key': key,
    });
    const retried = await renewed.api.checkout.pay(cart);

    expect(retried.paymentId).toBe(paid.paymentId);
    expect(renewed.resHeaders.get('idempotent-replayed')).toBe('true');
    const [row] = await h.database.client.sql<{ n: number }[]>`
      select count(*)::int as n from payments where idempotency_key = ${key}`;
    expect(row?.n).toBe(1);
  });
});
