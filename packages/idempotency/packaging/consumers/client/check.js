// The browser client from the installed tarball, in plain Node with a Map for localStorage:
// an attempt whose answer is lost is retried with the same key, and the accepted intent stays
// locked to that key. Prints what happened as JSON.
import { register } from 'node:module';

register('./no-packages.mjs', import.meta.url);
const { attemptForIntent, IdempotencyKeyManager, runRetryFlow } = await import(
  '@once/idempotency/client'
);

const items = new Map();
const storage = {
  getItem: (key) => items.get(key) ?? null,
  setItem: (key, value) => void items.set(key, value),
  removeItem: (key) => void items.delete(key),
};
const keys = new IdempotencyKeyManager({
  storage,
  scope: 'shop',
  intents: { fingerprint: (cart) => JSON.stringify(cart), parse: (value) => value },
});
const intent = keys.keyFor({ sku: 'book' });
const sentKeys = [];
const final = await runRetryFlow({
  send: () =>
    attemptForIntent(
      keys,
      intent.key,
      async () => {
        sentKeys.push(intent.key);
        return sentKeys.length === 1
          ? { kind: 'network', detail: 'connection reset' }
          : { kind: 'accepted', result: { orderId: 'ord_1' }, replayed: true };
      },
      (result) => result.orderId,
    ),
  onState: () => {},
  sleep: async () => {},
});
console.log(
  JSON.stringify({
    phase: final.phase,
    sends: sentKeys.length,
    oneKey: new Set(sentKeys).size === 1,
    locked: keys.keyFor({ sku: 'another' }).key === intent.key,
    stored: keys.current()?.status,
  }),
);
