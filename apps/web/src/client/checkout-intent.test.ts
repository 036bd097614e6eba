import { IdempotencyKeyManager, type KeyValueStorage } from '@once/idempotency/client';
import { describe, expect, it } from 'vitest';
import { type CheckoutIntentInput, cartHash } from './cart-hash.ts';
import {
  CHECKOUT_INTENT_NAMESPACE,
  checkoutIntents,
  parseCheckoutIntent,
  upgradeCheckoutRecord,
} from './checkout-intent.ts';

class MapStorage implements KeyValueStorage {
  readonly map = new Map<string, string>();
  getItem(key: string) {
    return this.map.get(key) ?? null;
  }
  setItem(key: string, value: string) {
    this.map.set(key, value);
  }
  removeItem(key: string) {
    this.map.delete(key);
  }
}

const cart: CheckoutIntentInput = {
  tenantId: 'tenant_a',
  lines: [
    { productId: 'book_sre', quantity: 1 },
    { productId: 'bookmark', quantity: 2 },
  ],
  paymentMethod: 'pm_card_visa',
};

describe('the checkout intent in the package key manager', () => {
  it('lives under once.checkout.intent.<tenant>; a reload with the cart reordered keeps its key', () => {
    const storage = new MapStorage();
    const manager = () =>
      new IdempotencyKeyManager({
        storage,
        scope: 'tenant_a',
        intents: checkoutIntents,
        namespace: CHECKOUT_INTENT_NAMESPACE,
      });
    const first = manager().keyFor(cart);
    const again = manager().keyFor({ ...cart, lines: [...cart.lines].reverse() });
    expect(again.key).toBe(first.key);
    expect([...storage.map.keys()]).toEqual(['once.checkout.intent.tenant_a']);
    expect(again.intent).toEqual(cart);
  });

  it('a record stored before the move (cartHash, cart, paymentId) keeps its key and its lock', () => {
    const storage = new MapStorage();
    storage.setItem(
      'once.checkout.intent.tenant_a',
      JSON.stringify({
        key: 'key-sent-before-the-deploy',
        cartHash: cartHash(cart),
        cart,
        status: 'unconfirmed',
        createdAt: '2026-11-23T19:00:00.000Z',
      }),
    );
    const manager = new IdempotencyKeyManager({
      storage,
      scope: 'tenant_a',
      intents: checkoutIntents,
      namespace: CHECKOUT_INTENT_NAMESPACE,
      upgradeRecord: upgradeCheckoutRecord,
    });
    const otherCart = { ...cart, lines: [{ productId: 'mug', quantity: 9 }] };
    expect(manager.keyFor(otherCart)).toMatchObject({
      key: 'key-sent-before-the-deploy',
      intent: cart,
      status: 'unconfirmed',
    });
    const accepted = upgradeCheckoutRecord({
      key: 'k',
      cartHash: 'h',
      cart,
      status: 'accepted',
      paymentId: 'pay_1',
    });
    expect(accepted).toMatchObject({ fingerprint: 'h', intent: cart, resultId: 'pay_1' });
  });

  it('reads back only what is a checkout intent', () => {
    expect(parseCheckoutIntent(cart)).toEqual(cart);
    expect(parseCheckoutIntent({ ...cart, lines: [{ productId: 1 }] })).toBeUndefined();
    expect(parseCheckoutIntent({ ...cart, tenantId: undefined })).toBeUndefined();
    expect(parseCheckoutIntent('cart')).toBeUndefined();
  });
});

describe('cartHash', () => {
  it('treats split lines and reordered lines as the same cart, as the server prices them', () => {
    const merged = cartHash({ ...cart, lines: [{ productId: 'x', quantity: 3 }] });
    const split = cartHash({
      ...cart,
      lines: [
        { productId: 'x', quantity: 2 },
        { productId: 'x', quantity: 1 },
      ],
    });
    expect(split).toBe(merged);
  });
});
