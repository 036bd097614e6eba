import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';
import { refusal } from '../../testing/refusal.ts';

const OPERATOR_CODE = 'capture-method-operator-code';
const cart = { lines: [{ productId: 'book_sre', quantity: 1 }] };

let h: ApiTestHarness;
let shopper: string;
let operator: string;

async function demoSession(role: 'shopper' | 'operator'): Promise<string> {
  const start = h.caller();
  await start.api.session.start({ demoTenantId: 'tenant_a', role, operatorCode: OPERATOR_CODE });
  const session = start.resHeaders
    .getSetCookie()
    .find((cookie) => /^once_(operator_)?session=/.test(cookie));
  return session!.split(';')[0]!;
}

const captureMethodOf = async (key: string) =>
  (
    await h.database.client.sql<{ capture_method: string }[]>`
      select capture_method from payments where idempotency_key = ${key}`
  )[0]?.capture_method;

beforeAll(async () => {
  h = await createApiTestHarness('api_pay_capture_method', { operatorCode: OPERATOR_CODE });
  shopper = await demoSession('shopper');
  operator = await demoSession('operator');
});
afterAll(async () => {
  await h?.drop();
});

describe('checkout.pay: the capture method is the merchant’s, never a shopper session’s', () => {
  it.each(['manual', 'automatic'] as const)(
    'a shopper session naming capture %s is refused, nothing is written, and its key stays usable',
    async (capture) => {
      const key = randomUUID();
      const api = h.caller({ cookie: shopper, 'idempotency-key': key }).api;
      expect(await refusal(api.checkout.pay({ ...cart, capture }))).toEqual({
        trpc: 'FORBIDDEN',
        code: 'operator_required',
      });
      expect(await captureMethodOf(key)).toBeUndefined();
      // Released, not stored: the shopper's own checkout with that key goes through.
      const paid = await api.checkout.pay(cart);
      expect(paid.status).toBe('processing');
      expect(await captureMethodOf(key)).toBe('automatic');
    },
  );

  it('the merchant chooses it: its API key and an operator session may authorise only', async () => {
    for (const headers of [bearer('tenant_a'), { cookie: operator }]) {
      const key = randomUUID();
      await h.caller({ ...headers, 'idempotency-key': key }).api.checkout.pay({
        ...cart,
        capture: 'manual',
      });
      expect(await captureMethodOf(key)).toBe('manual');
    }
  });
});
