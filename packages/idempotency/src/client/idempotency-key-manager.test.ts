import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { attemptForIntent } from './attempt-for-intent.ts';
import type { AttemptOutcomeKind } from './attempt-outcome.ts';
import {
  IdempotencyKeyManager,
  type IntentDescription,
  IntentStorageError,
  intentStorageKey,
  isLocked,
  type KeyValueStorage,
} from './idempotency-key-manager.ts';

/** A Map-backed stand-in for `localStorage`: one instance shared = tabs of one origin. */
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

/** What these tests keep as an intent: a cart, whose line order does not matter. */
interface Cart {
  tenantId: string;
  lines: { productId: string; quantity: number }[];
  paymentMethod: string;
}
const carts: IntentDescription<Cart> = {
  fingerprint: (c) =>
    JSON.stringify([
      c.tenantId,
      c.paymentMethod,
      c.lines.map((l) => `${l.productId}x${l.quantity}`).sort(),
    ]),
  parse: (value) => {
    const c = value as Partial<Cart> | null;
    return c && typeof c.tenantId === 'string' && Array.isArray(c.lines) ? (c as Cart) : undefined;
  },
};

const NAMESPACE = 'test.intent';
const TENANT = 'tenant_a';
const cart: Cart = {
  tenantId: TENANT,
  lines: [
    { productId: 'book_sre', quantity: 1 },
    { productId: 'bookmark', quantity: 2 },
  ],
  paymentMethod: 'pm_card_visa',
};
const otherCart: Cart = { ...cart, lines: [{ productId: 'book_sre', quantity: 5 }] };

function manager(storage: KeyValueStorage, generate = counterKeys(), scope = TENANT) {
  return new IdempotencyKeyManager({
    storage,
    scope,
    intents: carts,
    namespace: NAMESPACE,
    generate,
  });
}

describe('IdempotencyKeyManager: one key per intent', () => {
  it('reuses the key for the same cart across a reload or another tab (a new manager on the same storage)', () => {
    const storage = new MapStorage();
    const first = manager(storage).keyFor(cart);
    const again = manager(storage).keyFor({ ...cart, lines: [...cart.lines].reverse() });
    expect(first.key).toBe('key-1');
    expect(again.key).toBe(first.key);
    expect(storage.map.has(intentStorageKey(NAMESPACE, TENANT))).toBe(true);
  });

  it('gives a changed cart or card a new key while nothing was sent', () => {
    const keys = manager(new MapStorage());
    const a = keys.keyFor(cart).key;
    const b = keys.keyFor(otherCart).key;
    const c = keys.keyFor({ ...cart, paymentMethod: 'pm_card_chargeDeclined' }).key;
    expect(new Set([a, b, c]).size).toBe(3);
  });

  it('keeps merchants apart: each has its own intent', () => {
    const storage = new MapStorage();
    const a = manager(storage, counterKeys(), 'tenant_a');
    const b = manager(storage, () => 'other', 'tenant_b');
    a.beginAttempt(a.keyFor(cart).key);
    expect(b.keyFor({ ...cart, tenantId: 'tenant_b' }).key).toBe('other');
  });

  it('clears the intent once its payment finished, so the next purchase is a new intent', () => {
    const storage = new MapStorage();
    const keys = manager(storage);
    const first = keys.keyFor(cart);
    keys.beginAttempt(first.key);
    keys.recordAccepted(first.key, 'pay_1');
    expect(keys.current()).toMatchObject({ resultId: 'pay_1', status: 'accepted' });
    keys.clear(first.key);
    expect(storage.map.has(intentStorageKey(NAMESPACE, TENANT))).toBe(false);
    expect(keys.keyFor(cart).key).not.toBe(first.key);
  });
});

describe('IdempotencyKeyManager: an intent whose outcome is unknown stays locked', () => {
  it('is unconfirmed from the moment a request leaves, before any answer (a tab may die)', () => {
    const storage = new MapStorage();
    const keys = manager(storage);
    const intent = keys.keyFor(cart);
    expect(keys.beginAttempt(intent.key)).toBe('open');
    // Another tab, or this one after a reload, sees the lock.
    expect(isLocked(manager(storage).current())).toBe(true);
  });

  it('a lost response keeps the key: a changed cart or card still gets the SAME key and cart', () => {
    const keys = manager(new MapStorage());
    const intent = keys.keyFor(cart);
    const before = keys.beginAttempt(intent.key);
    keys.recordAnswer(intent.key, 'network', before);
    const asked = keys.keyFor(otherCart);
    expect(asked.key).toBe(intent.key);
    expect(asked.intent).toEqual(cart);
    expect(keys.startNewIntent(otherCart).key).toBe(intent.key);
    keys.clear(intent.key);
    expect(keys.current()?.key).toBe(intent.key);
  });

  it('a later "nothing ran" answer (503, 429, 401) does not unlock an earlier lost attempt', () => {
    for (const kind of ['store_unavailable', 'rate_limited', 'unauthenticated'] as const) {
      const keys = manager(new MapStorage());
      const intent = keys.keyFor(cart);
      keys.recordAnswer(intent.key, 'network', keys.beginAttempt(intent.key));
      keys.recordAnswer(intent.key, kind, keys.beginAttempt(intent.key));
      expect(keys.current()?.status, kind).toBe('unconfirmed');
    }
  });

  it('a "nothing ran" answer to the first attempt frees the form', () => {
    const keys = manager(new MapStorage());
    const intent = keys.keyFor(cart);
    keys.recordAnswer(intent.key, 'store_unavailable', keys.beginAttempt(intent.key));
    expect(keys.current()?.status).toBe('open');
    expect(keys.keyFor(otherCart).key).not.toBe(intent.key);
  });

  it('a 422 (key reused) is definite: the user may start a new payment with a new key', () => {
    const keys = manager(new MapStorage());
    const intent = keys.keyFor(cart);
    keys.recordAnswer(intent.key, 'network', keys.beginAttempt(intent.key));
    keys.recordAnswer(intent.key, 'key_reused', keys.beginAttempt(intent.key));
    expect(keys.current()?.status).toBe('open');
    expect(keys.startNewIntent(cart).key).not.toBe(intent.key);
  });

  it('an accepted payment stays locked until it is cleared as terminal', () => {
    const keys = manager(new MapStorage());
    const intent = keys.keyFor(cart);
    keys.beginAttempt(intent.key);
    keys.recordAccepted(intent.key, 'pay_1');
    keys.recordAnswer(intent.key, 'network', 'accepted');
    expect(keys.current()).toMatchObject({ status: 'accepted', resultId: 'pay_1' });
    expect(keys.keyFor(otherCart).key).toBe(intent.key);
  });

  const answerKinds: fc.Arbitrary<Exclude<AttemptOutcomeKind, 'accepted'>> = fc.constantFrom(
    'network',
    'server_error',
    'in_use',
    'outcome_unknown',
    'key_reused',
    'rejected',
    'store_unavailable',
    'rate_limited',
    'unauthenticated',
  );
  const anyCart: fc.Arbitrary<Cart> = fc.record({
    tenantId: fc.constant(TENANT),
    lines: fc.array(
      fc.record({
        productId: fc.constantFrom('book_sre', 'book_ddia', 'bookmark'),
        quantity: fc.integer({ min: 1, max: 99 }),
      }),
      { minLength: 1, maxLength: 4 },
    ),
    paymentMethod: fc.constantFrom('pm_card_visa', 'pm_card_chargeDeclined'),
  });

  it('property: from the first ambiguous answer until a definite one, every tab, reload and cart gets the same key', () => {
    fc.assert(
      fc.property(
        // Each step: a tab (0..2) asks for a key for some cart and sends one attempt with it.
        fc.array(fc.record({ tab: fc.nat({ max: 2 }), cart: anyCart, answer: answerKinds }), {
          minLength: 1,
          maxLength: 25,
        }),
        (steps) => {
          const storage = new MapStorage();
          const generate = counterKeys();
          const tabs = [0, 1, 2].map(() => manager(storage, generate));
          /** The key of an attempt that may have run, while no definite answer came. */
          let mayHaveRun: string | undefined;
          for (const step of steps) {
            const keys = tabs[step.tab]!;
            const intent = keys.keyFor(step.cart);
            if (mayHaveRun !== undefined) {
              expect(intent.key).toBe(mayHaveRun);
              expect(isLocked(keys.current())).toBe(true);
            }
            keys.recordAnswer(intent.key, step.answer, keys.beginAttempt(intent.key));
            const ambiguous = ['network', 'server_error', 'in_use', 'outcome_unknown'].includes(
              step.answer,
            );
            if (ambiguous) mayHaveRun = intent.key;
            else if (step.answer === 'key_reused' || step.answer === 'rejected') {
              mayHaveRun = undefined;
            }
            expect(isLocked(keys.current())).toBe(mayHaveRun !== undefined);
          }
        },
      ),
    );
  });
});

describe('IdempotencyKeyManager: storage trouble', () => {
  it('unreadable stored data blocks a new key until it is reset explicitly (never a crash)', () => {
    const storage = new MapStorage();
    storage.setItem(intentStorageKey(NAMESPACE, TENANT), '{not json');
    const keys = manager(storage);
    expect(keys.current()).toBeUndefined();
    expect(keys.problem()?.code).toBe('intent_unreadable');
    expect(() => keys.keyFor(cart)).toThrow(IntentStorageError);
    keys.resetUnreadable();
    expect(keys.problem()).toBeUndefined();
    expect(keys.keyFor(cart).key).toBe('key-1');
  });

  it('reads a record with an unknown status as locked: a stuck form beats a second payment', () => {
    const storage = new MapStorage();
    const keys = manager(storage);
    const intent = keys.keyFor(cart);
    storage.setItem(
      intentStorageKey(NAMESPACE, TENANT),
      JSON.stringify({ ...keys.current(), status: 'something_new' }),
    );
    expect(keys.current()?.status).toBe('unconfirmed');
    expect(keys.keyFor(otherCart).key).toBe(intent.key);
  });

  it('hands out no key when storage is disabled: nothing could survive a reload', () => {
    const keys = manager(new BrokenStorage());
    expect(() => keys.keyFor(cart)).toThrow(
      expect.objectContaining({ code: 'intent_not_persisted' }),
    );
    expect(keys.problem()?.code).toBe('intent_not_persisted');
  });

  it('a locked record that no longer parses stays locked: no fresh key, a clear error, an explicit reset', () => {
    const storage = new MapStorage();
    const keys = manager(storage);
    const intent = keys.keyFor(cart);
    keys.beginAttempt(intent.key);
    // A later page version, or another app, changed the shape of the intent under the lock.
    const record = JSON.parse(storage.getItem(intentStorageKey(NAMESPACE, TENANT))!);
    storage.setItem(
      intentStorageKey(NAMESPACE, TENANT),
      JSON.stringify({ ...record, intent: { something: 'else' } }),
    );
    const reloaded = manager(storage, counterKeys());
    expect(reloaded.problem()).toMatchObject({ code: 'intent_unreadable' });
    expect(reloaded.problem()?.message).toMatch(/could not be read/);
    expect(() => reloaded.keyFor(otherCart)).toThrow(IntentStorageError);
    expect(() => reloaded.startNewIntent(cart)).toThrow(IntentStorageError);
    expect(() => reloaded.beginAttempt(intent.key)).toThrow(IntentStorageError);
    // The record is still there: another tab, or support, can still read it.
    expect(JSON.parse(storage.getItem(intentStorageKey(NAMESPACE, TENANT))!).key).toBe(intent.key);
    reloaded.resetUnreadable();
    expect(reloaded.keyFor(cart).key).toBe('key-1');
  });

  it('storage full: the lock is not persisted, so the attempt is refused before anything is sent', async () => {
    const storage = new MapStorage();
    const keys = manager(storage);
    const intent = keys.keyFor(cart);
    storage.setItem = () => {
      throw Object.assign(new Error('quota'), { name: 'QuotaExceededError' });
    };
    let sent = 0;
    await expect(
      attemptForIntent(
        keys,
        intent.key,
        async () => {
          sent++;
          return { kind: 'network', detail: 'x' } as const;
        },
        () => 'r',
      ),
    ).rejects.toMatchObject({ code: 'intent_not_persisted' });
    expect(sent).toBe(0);
    expect(keys.problem()?.code).toBe('intent_not_persisted');
    // Not locked in memory as if it had been persisted: the stored intent is still open.
    expect(keys.current()?.status).toBe('open');
    // A new intent gets no key either.
    expect(() => keys.keyFor(otherCart)).toThrow(IntentStorageError);
  });

  it('uses random UUIDs by default', () => {
    const keys = new IdempotencyKeyManager({
      storage: new MapStorage(),
      scope: TENANT,
      intents: carts,
    });
    expect(keys.storageKey).toBe('idempotency.intent.tenant_a');
    expect(keys.keyFor(cart).key).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });
});

describe("IdempotencyKeyManager: what it stores is the caller's", () => {
  it('copies the intent: the caller mutating its object changes neither key nor stored intent', () => {
    const keys = manager(new MapStorage());
    const mine = { ...cart, lines: [...cart.lines] };
    const intent = keys.keyFor(mine);
    mine.lines.push({ productId: 'extra', quantity: 1 });
    expect(keys.current()?.intent).toEqual(cart);
    expect(keys.keyFor(cart).key).toBe(intent.key);
  });

  it('reads a record an earlier page stored in another shape through upgradeRecord', () => {
    const storage = new MapStorage();
    storage.setItem(
      intentStorageKey(NAMESPACE, TENANT),
      JSON.stringify({
        id: 'old-key',
        hash: carts.fingerprint(cart),
        what: cart,
        status: 'unconfirmed',
      }),
    );
    expect(manager(storage).current()).toBeUndefined();
    const upgraded = new IdempotencyKeyManager({
      storage,
      scope: TENANT,
      intents: carts,
      namespace: NAMESPACE,
      upgradeRecord: ({ id, hash, what, ...rest }) => ({
        ...rest,
        key: id,
        fingerprint: hash,
        intent: what,
      }),
    });
    expect(upgraded.keyFor(otherCart)).toMatchObject({ key: 'old-key', status: 'unconfirmed' });
  });

  it('drops a stored record whose intent the caller does not recognise', () => {
    const storage = new MapStorage();
    const keys = manager(storage);
    keys.keyFor(cart);
    const record = JSON.parse(storage.getItem(intentStorageKey(NAMESPACE, TENANT))!);
    storage.setItem(
      intentStorageKey(NAMESPACE, TENANT),
      JSON.stringify({ ...record, intent: { something: 'else' } }),
    );
    expect(keys.current()).toBeUndefined();
  });
});
