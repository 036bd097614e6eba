import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { attemptForIntent } from './attempt-for-intent.ts';
import type { AttemptOutcome } from './attempt-outcome.ts';
import {
  IdempotencyKeyManager,
  type IntentDescription,
  isLocked,
  type KeyValueStorage,
} from './idempotency-key-manager.ts';
import { runRetryFlow } from './retry-flow.ts';

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

type Result = { paymentId: string };
interface Cart {
  tenantId: string;
  lines: { productId: string; quantity: number }[];
  paymentMethod: string;
}
const carts: IntentDescription<Cart> = {
  fingerprint: (c) => JSON.stringify(c),
  parse: (value) => value as Cart,
};
const newManager = () =>
  new IdempotencyKeyManager({ storage: new MapStorage(), scope: 'tenant_a', intents: carts });

const cart: Cart = {
  tenantId: 'tenant_a',
  lines: [{ productId: 'book_sre', quantity: 1 }],
  paymentMethod: 'pm_card_visa',
};
const otherCart: Cart = { ...cart, lines: [{ productId: 'bookmark', quantity: 3 }] };

const answers: fc.Arbitrary<AttemptOutcome<Result>> = fc.oneof(
  fc.constant<AttemptOutcome<Result>>({
    kind: 'accepted',
    result: { paymentId: 'pay_1' },
    replayed: false,
  }),
  fc.constant<AttemptOutcome<Result>>({ kind: 'network', detail: 'reset' }),
  fc.constant<AttemptOutcome<Result>>({ kind: 'server_error', status: 502, detail: 'bad gateway' }),
  fc.constant<AttemptOutcome<Result>>({ kind: 'in_use', retryAfterSeconds: 1 }),
  fc.constant<AttemptOutcome<Result>>({ kind: 'outcome_unknown', retryAfterSeconds: 1 }),
  fc.constant<AttemptOutcome<Result>>({ kind: 'key_reused' }),
  fc.constant<AttemptOutcome<Result>>({ kind: 'store_unavailable', retryAfterSeconds: 2 }),
  fc.constant<AttemptOutcome<Result>>({ kind: 'rate_limited', retryAfterSeconds: 2 }),
  fc.constant<AttemptOutcome<Result>>({ kind: 'unauthenticated' }),
  fc.constant<AttemptOutcome<Result>>({
    kind: 'rejected',
    code: 'empty_cart',
    message: 'Empty cart',
  }),
);

/** Runs the checkout's pay flow over a scripted server, the way the page wires it. */
async function payThrough(keys: IdempotencyKeyManager<Cart>, script: AttemptOutcome<Result>[]) {
  const intent = keys.keyFor(cart);
  const seen: AttemptOutcome<Result>[] = [];
  const sentKeys: string[] = [];
  const final = await runRetryFlow<Result>({
    send: () =>
      attemptForIntent(
        keys,
        intent.key,
        async () => {
          sentKeys.push(intent.key);
          const next = script[Math.min(seen.length, script.length - 1)]!;
          seen.push(next);
          return next;
        },
        (result) => result.paymentId,
      ),
    onState: () => {},
    sleep: async () => {},
    maxNetworkAttempts: 3,
    maxConflictWaits: 3,
  });
  return { intent, final, seen, sentKeys };
}

describe('attemptForIntent with runRetryFlow', () => {
  it('a lost response, retries exhausted: outcome unknown, the intent locked to its key and cart', async () => {
    const keys = newManager();
    const { intent, final, sentKeys } = await payThrough(keys, [
      { kind: 'network', detail: 'reset' },
    ]);
    expect(final.phase).toBe('outcome_unknown');
    expect(new Set(sentKeys)).toEqual(new Set([intent.key]));
    expect(isLocked(keys.current())).toBe(true);
    expect(keys.keyFor(otherCart)).toMatchObject({ key: intent.key, intent: cart });
  });

  it('a lost response then a 503: still locked (the first attempt may have run)', async () => {
    const keys = newManager();
    const { final } = await payThrough(keys, [
      { kind: 'network', detail: 'reset' },
      { kind: 'store_unavailable', retryAfterSeconds: 2 },
    ]);
    expect(final.phase).toBe('store_unavailable');
    expect(keys.current()?.status).toBe('unconfirmed');
  });

  it('property: the flow leaves the intent locked exactly when the payment may exist', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(answers, { minLength: 1, maxLength: 12 }), async (script) => {
        const keys = newManager();
        const { intent, final, seen, sentKeys } = await payThrough(keys, script);
        // Every attempt of the intent carried its one key.
        expect(new Set(sentKeys)).toEqual(new Set([intent.key]));
        let mayExist = false;
        for (const answer of seen) {
          if (answer.kind === 'accepted') mayExist = true;
          else if (['network', 'server_error', 'in_use', 'outcome_unknown'].includes(answer.kind)) {
            mayExist = true;
          } else if (answer.kind === 'key_reused' || answer.kind === 'rejected') mayExist = false;
        }
        expect(isLocked(keys.current())).toBe(mayExist);
        if (final.phase === 'outcome_unknown') expect(isLocked(keys.current())).toBe(true);
        if (final.phase === 'accepted') expect(keys.current()?.resultId).toBe('pay_1');
      }),
    );
  });
});
