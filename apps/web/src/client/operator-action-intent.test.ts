import type { KeyValueStorage } from '@once/idempotency/client';
import { describe, expect, it } from 'vitest';
import { claimIntent, forgetIntent, intentStorageKey } from './operator-action-intent.ts';

/** One origin's localStorage, as every tab of the cockpit sees it. */
function sharedStorage(): KeyValueStorage {
  const items = new Map<string, string>();
  return {
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}

let minted = 0;
const mint = () => `key-${++minted}`;

describe('an operator action intent is shared by every tab of the cockpit', () => {
  it('the same refund pressed in two tabs sends one key with the first tab’s input', () => {
    const storage = sharedStorage();
    const where = intentStorageKey('pay_1', 'refund');
    const tabA = claimIntent(storage, where, { paymentId: 'pay_1', amount: 500 }, mint);
    const tabB = claimIntent(storage, where, { paymentId: 'pay_1', amount: 700 }, mint);
    expect(tabB).toEqual(tabA);
    expect(tabB.input).toEqual({ paymentId: 'pay_1', amount: 500 });
  });

  it('a final answer frees the button for a new action, and a stale tab cannot drop a newer intent', () => {
    const storage = sharedStorage();
    const where = intentStorageKey('pay_2', 'refund');
    const first = claimIntent(storage, where, { amount: 100 }, mint);
    forgetIntent(storage, where, first.key);
    const second = claimIntent(storage, where, { amount: 200 }, mint);
    expect(second.key).not.toBe(first.key);
    // Another tab hears the first key's answer late: the second intent stays.
    forgetIntent(storage, where, first.key);
    expect(claimIntent(storage, where, { amount: 300 }, mint)).toEqual(second);
  });

  it('without storage (disabled) each press still gets a key of its own', () => {
    const where = intentStorageKey('pay_3', 'capture');
    const a = claimIntent(undefined, where, {}, mint);
    expect(a.key).toMatch(/^key-/);
  });
});
