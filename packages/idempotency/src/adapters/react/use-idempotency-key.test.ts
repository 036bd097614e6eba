import { describe, expect, it } from 'vitest';
import type { IntentDescription, KeyValueStorage } from '../../client/idempotency-key-manager.ts';
import { createKeyManager } from './use-idempotency-key.ts';

const storage = (entries: Record<string, string>): KeyValueStorage => {
  const map = new Map(Object.entries(entries));
  return {
    getItem: (key) => map.get(key) ?? null,
    setItem: (key, value) => void map.set(key, value),
    removeItem: (key) => void map.delete(key),
  };
};

const carts: IntentDescription<{ sku: string }> = {
  fingerprint: (c) => c.sku,
  parse: (v) =>
    typeof (v as { sku?: unknown })?.sku === 'string' ? (v as { sku: string }) : undefined,
};

describe('useIdempotencyKey: its manager', () => {
  it('upgrades a record an older page stored through the upgradeRecord the hook was given', () => {
    const old = storage({
      'shop.intent.t1': JSON.stringify({
        id: 'old-key',
        hash: 'a',
        what: { sku: 'a' },
        status: 'unconfirmed',
      }),
    });
    const keys = createKeyManager(
      {
        scope: 't1',
        namespace: 'shop.intent',
        intents: carts,
        storage: () => old,
        upgradeRecord: ({ id, hash, what, ...rest }) => ({
          ...rest,
          key: id,
          fingerprint: hash,
          intent: what,
        }),
        onExternalChange: () => {},
      },
      't1',
    );
    expect(keys.problem()).toBeUndefined();
    expect(keys.keyFor({ sku: 'b' })).toMatchObject({ key: 'old-key', status: 'unconfirmed' });
  });
});
