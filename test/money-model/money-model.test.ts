import { describe, expect, it } from 'vitest';
import {
  type Answer,
  emptyModel,
  explainBatch,
  type ModelRequest,
  workerRan,
} from './money-model.ts';

// The checker of the model-based search must refuse what the money rules forbid, whatever the
// order: a search whose checker accepts everything proves nothing.
const PRICE = 1000;
const paid = () => {
  const pay: ModelRequest = { op: 'pay', transport: 'rest', key: 'p', payment: 0, amount: 1 };
  const m = explainBatch(emptyModel(), [pay], [{ ok: true, id: 'pay_1' }], PRICE)!;
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
    expect(explainBatch(paid(), batch, [ok('rf_a'), ok('rf_b')], PRICE)).toBeUndefined();
    const after = explainBatch(paid(), batch, [no('refund_amount_too_large'), ok('rf_b')], PRICE);
    expect(after?.payments[0]).toMatchObject({ received: PRICE, refunded: PRICE });
  });

  it('one key on two transports is one refund: the same id, or 422 for another amount', () => {
    const m = explainBatch(paid(), [refund('k', 'rest', 10)], [ok('rf_k')], PRICE)!;
    expect(explainBatch(m, [refund('k', 'trpc', 10)], [ok('rf_other')], PRICE)).toBeUndefined();
    expect(explainBatch(m, [refund('k', 'trpc', 10)], [ok('rf_k')], PRICE)).toBeDefined();
    expect(explainBatch(m, [refund('k', 'graphql', 11)], [ok('rf_k2')], PRICE)).toBeUndefined();
    expect(
      explainBatch(m, [refund('k', 'graphql', 11)], [no('idempotency_key_reused')], PRICE),
    ).toBeDefined();
  });

  it('a 409 in use only for a request whose key row another request of the batch held', () => {
    const alone = [refund('k', 'rest', 10), refund('j', 'rest', 10)];
    expect(
      explainBatch(paid(), alone, [ok(), no('idempotency_key_in_use')], PRICE),
    ).toBeUndefined();
    const twice = [refund('k', 'rest', 10), refund('k', 'rest', 10)];
    expect(explainBatch(paid(), twice, [ok(), no('idempotency_key_in_use')], PRICE)).toBeDefined();
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
    const m = explainBatch(emptyModel(), [pay], [ok('pay_1')], PRICE)!;
    workerRan(m);
    const capture: ModelRequest = { op: 'capture', transport: 'rest', key: 'c', payment: 0 };
    const captured = explainBatch(m, [capture], [ok()], PRICE)!;
    workerRan(captured);
    expect(explainBatch(captured, [refund('c', 'trpc', 1)], [ok('rf_c')], PRICE)).toBeUndefined();
    expect(explainBatch(captured, [refund('d', 'trpc', 1)], [ok('rf_d')], PRICE)).toBeDefined();
  });
});
