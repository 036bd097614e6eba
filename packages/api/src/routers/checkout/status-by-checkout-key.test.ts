import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkoutKeyProof } from '../../checkout/checkout-key-proof.ts';
import { type ApiTestHarness, createApiTestHarness } from '../../testing/api-test-harness.ts';
import { refusal } from '../../testing/refusal.ts';

const cart = { lines: [{ productId: 'book_sre', quantity: 1 }] };
let h: ApiTestHarness;

/** A new demo shopper session of `tenant`: what a renewed cookie is. */
async function shopperSession(tenant: 'tenant_a' | 'tenant_b'): Promise<string> {
  const start = h.caller();
  await start.api.session.start({ demoTenantId: tenant });
  const session = start.resHeaders
    .getSetCookie()
    .find((cookie) => cookie.startsWith('once_session='));
  return session!.split(';')[0]!;
}

beforeAll(async () => {
  h = await createApiTestHarness('api_status_by_checkout_key');
});
afterAll(async () => {
  await h?.drop();
});

describe('checkout.status: whoever holds the checkout key follows its payment', () => {
  it('a renewed session reads the payment its checkout key made, with the key’s proof', async () => {
    const key = randomUUID();
    const first = await shopperSession('tenant_a');
    const paid = await h.caller({ cookie: first, 'idempotency-key': key }).api.checkout.pay(cart);
    const renewed = h.caller({ cookie: await shopperSession('tenant_a') }).api;
    // The same key replays the payment for the renewed session...
    const replayed = await h
      .caller({ cookie: await shopperSession('tenant_a'), 'idempotency-key': key })
      .api.checkout.pay(cart);
    expect(replayed.paymentId).toBe(paid.paymentId);
    // ...and with the key's proof its status (the 3-D Secure challenge's link) is readable.
    const view = await renewed.checkout.status({
      paymentId: paid.paymentId,
      checkoutKeyProof: await checkoutKeyProof(key),
    });
    expect(view).toMatchObject({ paymentId: paid.paymentId, status: 'processing' });
  });

  it('without the key nobody else reads it: no proof, another key’s proof, another payment, another tenant', async () => {
    const key = randomUUID();
    const owner = await shopperSession('tenant_a');
    const paid = await h.caller({ cookie: owner, 'idempotency-key': key }).api.checkout.pay(cart);
    const otherKey = randomUUID();
    const other = await h
      .caller({ cookie: await shopperSession('tenant_a'), 'idempotency-key': otherKey })
      .api.checkout.pay(cart);
    const stranger = h.caller({ cookie: await shopperSession('tenant_a') }).api;
    const notFound = { trpc: 'NOT_FOUND', code: 'payment_not_found' };
    expect(await refusal(stranger.checkout.status({ paymentId: paid.paymentId }))).toEqual(
      notFound,
    );
    expect(
      await refusal(
        stranger.checkout.status({
          paymentId: paid.paymentId,
          checkoutKeyProof: await checkoutKeyProof(otherKey),
        }),
      ),
    ).toEqual(notFound);
    // A proof opens only the payment of its own key.
    expect(
      await refusal(
        stranger.checkout.status({
          paymentId: other.paymentId,
          checkoutKeyProof: await checkoutKeyProof(key),
        }),
      ),
    ).toEqual(notFound);
    const otherTenant = h.caller({ cookie: await shopperSession('tenant_b') }).api;
    expect(
      await refusal(
        otherTenant.checkout.status({
          paymentId: paid.paymentId,
          checkoutKeyProof: await checkoutKeyProof(key),
        }),
      ),
    ).toEqual(notFound);
  });

  it('the proof is the hex SHA-256 of the key, so the key itself never travels in a URL', async () => {
    expect(await checkoutKeyProof('abc')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
  });
});
