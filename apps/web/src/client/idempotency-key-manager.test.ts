import { describe, expect, it } from 'vitest';
import { cartHash } from './cart-hash.ts';
import {
  IdempotencyKeyManager,
  INTENT_STORAGE_KEY,
  type KeyValueStorage,
} from './idempotency-key-manager.ts';

/** A Map-backed stand-in for `sessionStorage` (shared across "reloads" like the real one). */
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

/** Storage that refuses everything, like Safari private mode or a disabled storage policy. */
class BrokenStorage implements KeyValueStorage {
  getItem(): string | null {
    throw new Error('SecurityError');
  }
  setItem(): void {
    throw new Error('QuotaExceededError');
  }
  removeItem(): void {
    throw new Error('SecurityError');
  }
}

function counterKeys() {
  let n = 0;
  return () => `key-${++n}`;
}

const cart = {
  tenantId: 'tenant_a',
  lines: [
    { productId: 'book_sre', quantity: 1 },
    { productId: 'bookmark', quantity: 2 },
  ],
  paymentMethod: 'pm_card_visa',
};

describe('IdempotencyKeyManager', () => {
  it('reuses the key for the same cart, across a reload (a new manager on the same storage)', () => {
    const storage = new MapStorage();
    const first = new IdempotencyKeyManager(storage, counterKeys()).keyFor(cart);
    const again = new IdempotencyKeyManager(storage, counterKeys()).keyFor({
      ...cart,
      lines: [...cart.lines].reverse(),
    });
    expect(first.key).toBe('key-1');
    expect(again.key).toBe(first.key);
  });

  it('gives a changed cart, card or merchant a new key', () => {
    const storage = new MapStorage();
    const keys = new IdempotencyKeyManager(storage, counterKeys());
    const a = keys.keyFor(cart).key;
    const b = keys.keyFor({ ...cart, lines: [{ productId: 'book_sre', quantity: 2 }] }).key;
    const c = keys.keyFor({ ...cart, paymentMethod: 'pm_card_chargeDeclined' }).key;
    const d = keys.keyFor({ ...cart, tenantId: 'tenant_b' }).key;
    expect(new Set([a, b, c, d]).size).toBe(4);
  });

  it('clears the intent once its payment finished, so the next purchase is a new intent', () => {
    const storage = new MapStorage();
    const keys = new IdempotencyKeyManager(storage, counterKeys());
    const first = keys.keyFor(cart);
    keys.recordPayment(first.key, 'pay_1');
    expect(keys.current()?.paymentId).toBe('pay_1');
    keys.clear(first.key);
    expect(storage.map.has(INTENT_STORAGE_KEY)).toBe(false);
    expect(keys.keyFor(cart).key).not.toBe(first.key);
  });

  it('does not clear or annotate an intent that was already replaced', () => {
    const keys = new IdempotencyKeyManager(new MapStorage(), counterKeys());
    const old = keys.keyFor(cart);
    const next = keys.keyFor({ ...cart, paymentMethod: 'pm_card_mastercard' });
    keys.recordPayment(old.key, 'pay_old');
    keys.clear(old.key);
    expect(keys.current()).toEqual({ ...next });
  });

  it('renew() replaces the key for the same cart (after a 422 the user starts over)', () => {
    const keys = new IdempotencyKeyManager(new MapStorage(), counterKeys());
    const old = keys.keyFor(cart);
    const renewed = keys.renew(cart);
    expect(renewed.key).not.toBe(old.key);
    expect(keys.keyFor(cart).key).toBe(renewed.key);
  });

  it('ignores unreadable stored data instead of crashing the checkout', () => {
    const storage = new MapStorage();
    storage.setItem(INTENT_STORAGE_KEY, '{not json');
    const keys = new IdempotencyKeyManager(storage, counterKeys());
    expect(keys.current()).toBeUndefined();
    expect(keys.keyFor(cart).key).toBe('key-1');
  });

  it('still sends one key per intent on this page when storage is disabled', () => {
    const keys = new IdempotencyKeyManager(new BrokenStorage(), counterKeys());
    const a = keys.keyFor(cart).key;
    expect(keys.keyFor(cart).key).toBe(a);
    keys.clear(a);
    expect(keys.keyFor(cart).key).not.toBe(a);
  });

  it('uses random UUIDs by default', () => {
    const keys = new IdempotencyKeyManager(new MapStorage());
    expect(keys.keyFor(cart).key).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
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
