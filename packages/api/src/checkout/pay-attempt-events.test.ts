import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiTestHarness, bearer, createApiTestHarness } from '../testing/api-test-harness.ts';

let h: ApiTestHarness;
beforeAll(async () => {
  h = await createApiTestHarness('api_pay_attempt_events');
});
afterAll(async () => {
  await h.drop();
});

const payWith = (key: string, quantity: number) =>
  h
    .caller({ ...bearer('tenant_a'), 'idempotency-key': key })
    .api.checkout.pay({ lines: [{ productId: 'book_sre', quantity }] });

describe("pay's attempts on the payment's timeline", () => {
  it('a key refused for another cart (422) shows beside its execution and replay, naming the refusal', async () => {
    const key = randomUUID();
    const first = await payWith(key, 1);
    await payWith(key, 1);
    await expect(payWith(key, 2)).rejects.toMatchObject({ code: 'UNPROCESSABLE_CONTENT' });
    const timeline = await h
      .caller(bearer('tenant_a'))
      .api.ops.paymentTimeline({ paymentId: first.paymentId });
    const attempts = timeline.events.filter((e) => e.kind === 'pay.attempt');
    expect(attempts.map((e) => [e.detail.key, e.detail.replayed, e.detail.answer ?? null])).toEqual(
      [
        [key, false, null],
        [key, true, null],
        [key, false, 'idempotency_key_reused'],
      ],
    );
  });
});
