import { describe, expect, it } from 'vitest';
import {
  type Answer,
  emptyModel,
  explainBatch,
  explainBatchAll,
  type ModelRequest,
  shopperMayRead,
  workerRan,
} from './money-model.ts';

// The checker of the model-based search must refuse what the money rules forbid, whatever the
// order: a search whose checker accepts everything proves nothing.
const PRICE = 1000;
const PRICES = { a: PRICE, b: PRICE };
const paid = () => {
  const pay: ModelRequest = { op: 'pay', transport: 'rest', key: 'p', payment: 0, amount: 1 };
  const m = explainBatch(emptyModel(), [pay], [{ ok: true, id: 'pay_1' }], PRICES)!;
  workerRan(m);
  return m;
};
const refund = (
  key: string,
  transport: ModelRequest['transport'],
  amount?: number,
): ModelRequest => ({
  op: 'refund',
  transport,
  key,
  payment: 0,
  amount,
});
const ok = (id?: string): Answer => ({ ok: true, id });
const no = (code: string): Answer => ({ ok: false, code });

describe('the money model checker', () => {
  it('two whole refunds sent at once under two keys: one may be accepted, never both', () => {
    const batch = [refund('a', 'rest', PRICE), refund('b', 'graphql', PRICE)];
    expect(explainBatch(paid(), batch, [ok('rf_a'), ok('rf_b')], PRICES)).toBeUndefined();
    const after = explainBatch(paid(), batch, [no('refund_amount_too_large'), ok('rf_b')], PRICES);
    expect(after?.payments[0]).toMatchObject({ received: PRICE, refunded: PRICE });
  });

  it('one key on two transports is one refund: the same id, or 422 for another amount', () => {
    const m = explainBatch(paid(), [refund('k', 'rest', 10)], [ok('rf_k')], PRICES)!;
    expect(explainBatch(m, [refund('k', 'trpc', 10)], [ok('rf_other')], PRICES)).toBeUndefined();
    expect(explainBatch(m, [refund('k', 'trpc', 10)], [ok('rf_k')], PRICES)).toBeDefined();
    expect(explainBatch(m, [refund('k', 'graphql', 11)], [ok('rf_k2')], PRICES)).toBeUndefined();
    expect(
      explainBatch(m, [refund('k', 'graphql', 11)], [no('idempotency_key_reused')], PRICES),
    ).toBeDefined();
  });

  it('a 409 in use only for a request whose key row another request of the batch held', () => {
    const alone = [refund('k', 'rest', 10), refund('j', 'rest', 10)];
    expect(
      explainBatch(paid(), alone, [ok(), no('idempotency_key_in_use')], PRICES),
    ).toBeUndefined();
    const twice = [refund('k', 'rest', 10), refund('k', 'rest', 10)];
    expect(explainBatch(paid(), twice, [ok(), no('idempotency_key_in_use')], PRICES)).toBeDefined();
  });

  it('a key that captured refunds nothing', () => {
    const pay: ModelRequest = {
      op: 'pay',
      transport: 'graphql',
      key: 'p',
      payment: 0,
      amount: 1,
      manual: true,
    };
    const m = explainBatch(emptyModel(), [pay], [ok('pay_1')], PRICES)!;
    workerRan(m);
    const capture: ModelRequest = { op: 'capture', transport: 'rest', key: 'c', payment: 0 };
    const captured = explainBatch(m, [capture], [ok()], PRICES)!;
    workerRan(captured);
    expect(explainBatch(captured, [refund('c', 'trpc', 1)], [ok('rf_c')], PRICES)).toBeUndefined();
    expect(explainBatch(captured, [refund('d', 'trpc', 1)], [ok('rf_d')], PRICES)).toBeDefined();
  });

  it('a merchant acts on its own payments only, and a rotated key opens nothing after the rotation', () => {
    const theirs = { ...refund('k', 'rest', 10), tenant: 'b' as const };
    expect(explainBatch(paid(), [theirs], [ok('rf_b')], PRICES)).toBeUndefined();
    expect(explainBatch(paid(), [theirs], [no('payment_not_found')], PRICES)).toBeDefined();
    const rotate: ModelRequest = { op: 'rotate', transport: 'cockpit', key: '', payment: -1 };
    const old = refund('k', 'graphql', 10);
    // Sent beside the rotation: before it (accepted) or after it (refused), never both ways wrong.
    expect(explainBatch(paid(), [old, rotate], [ok('rf_k'), ok()], PRICES)).toBeDefined();
    const after = explainBatch(paid(), [rotate], [ok()], PRICES)!;
    expect(explainBatch(after, [old], [ok('rf_k')], PRICES)).toBeUndefined();
    expect(explainBatch(after, [{ ...old, keyGen: 1 }], [ok('rf_k')], PRICES)).toBeDefined();
  });

  it('a key is the merchant’s: a retry with its rotated API key or from the cockpit replays', () => {
    const first = refund('k', 'trpc', 10);
    const m = explainBatch(paid(), [first], [ok('rf_k')], PRICES)!;
    const rotate: ModelRequest = { op: 'rotate', transport: 'cockpit', key: '', payment: -1 };
    const after = explainBatch(m, [rotate], [ok()], PRICES)!;
    const retry = { ...first, keyGen: 1 };
    expect(explainBatch(after, [retry], [no('idempotency_key_reused')], PRICES)).toBeUndefined();
    expect(explainBatch(after, [retry], [ok('rf_k')], PRICES)).toBeDefined();
    const signedIn = { ...after, session: 'active' as const, sessions: 1 };
    expect(
      explainBatch(signedIn, [refund('k', 'cockpit', 10)], [ok('rf_k')], PRICES),
    ).toBeDefined();
    const theirs = { ...first, tenant: 'b' as const };
    expect(explainBatch(after, [theirs], [ok('rf_k')], PRICES)).toBeUndefined();
  });

  it('a shopper moves no money and reads only what it placed or proves the key of', () => {
    const m = paid();
    const shopperRefund = { ...refund('k', 'shopper', 10), shopper: 0 };
    expect(explainBatch(m, [shopperRefund], [ok('rf_k')], PRICES)).toBeUndefined();
    expect(explainBatch(m, [shopperRefund], [no('operator_required')], PRICES)).toBeDefined();
    expect(shopperMayRead(m, 0, 0)).toBe(false);
    expect(shopperMayRead(m, 0, 0, 'p')).toBe(true);
  });

  it('a cut request: a 503 changed nothing, a 409 outcome unknown may have acted', () => {
    const whole = refund('k', 'rest', PRICE);
    const unavailable = explainBatchAll(
      paid(),
      [whole],
      [no('idempotency_store_unavailable')],
      PRICES,
    );
    expect(unavailable.map((m) => m.payments[0]!.refunded)).toEqual([0]);
    const unknown = explainBatchAll(paid(), [whole], [no('idempotency_outcome_unknown')], PRICES);
    expect(unknown.map((m) => m.payments[0]!.refunded).sort()).toEqual([0, PRICE]);
  });
});
