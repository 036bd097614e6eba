import { randomUUID } from 'node:crypto';
import type { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';
import { refusal } from '../../testing/refusal.ts';
import { opsRouter } from './index.ts';

/** The deployment's operator code (ONCE_OPERATOR_CODE): a demo operator must give it. */
const OPERATOR_CODE = 'role-test-operator-code';

/** A demo session's `Cookie` header value. */
async function demoSession(
  h: ApiTestHarness,
  role: 'shopper' | 'operator' | undefined,
): Promise<string> {
  const start = h.caller();
  await start.api.session.start(
    role === undefined
      ? { demoTenantId: 'tenant_a' }
      : { demoTenantId: 'tenant_a', role, operatorCode: OPERATOR_CODE },
  );
  return start.resHeaders.get('set-cookie')!.split(';')[0]!;
}

// The demo's chaos switches are operator-only too; chaos.test.ts covers them.
type OpsProcedure = Exclude<keyof typeof opsRouter._def.procedures, `chaos${string}`>;
const opsProcedures = Object.keys(opsRouter._def.procedures).filter(
  (name) => !name.startsWith('chaos'),
) as OpsProcedure[];

/**
 * A valid input of each ops procedure (lists take a limit; the timeline, the money, capture and
 * void, one payment; key actions, a key; a resend, an event).
 */
function callOps(
  api: ReturnType<ApiTestHarness['caller']>['api'],
  name: OpsProcedure,
  paymentId: string,
): Promise<unknown> {
  if (name === 'paymentTimeline' || name === 'paymentMoney') return api.ops[name]({ paymentId });
  if (name === 'stuckPayments') return api.ops.stuckPayments();
  const key = { operation: 'checkout.pay', key: 'no-such-key' };
  if (name === 'idempotencyKey') return api.ops.idempotencyKey(key);
  if (name === 'releaseIdempotencyKey' || name === 'evictIdempotencyKey') {
    // Past the role check, an action on a key that does not exist is refused as not found.
    return api.ops[name]({ ...key, revision: 'r', reason: 'role check' }).catch((error) => {
      if ((error as TRPCError).code === 'NOT_FOUND') return 'not_found';
      throw error;
    });
  }
  if (name === 'capturePayment' || name === 'voidPayment' || name === 'refundPayment') {
    // Past the role check, a payment that is not authorised (or received nothing) is refused
    // as a conflict.
    return api.ops[name]({ paymentId }).catch((error) => {
      if ((error as TRPCError).code === 'CONFLICT') return 'not_authorized';
      throw error;
    });
  }
  if (name === 'resendWebhook') {
    // Past the role check, a resend with no processor configured cannot be sent.
    return api.ops.resendWebhook({ eventId: 'evt_role_check' }).catch((error) => {
      if ((error as TRPCError).code === 'SERVICE_UNAVAILABLE') return 'processor_unavailable';
      throw error;
    });
  }
  return api.ops[name]({ limit: 10 });
}

describe('roles: a shopper pays and reads its own payments; only an operator reads ops.*', () => {
  let h: ApiTestHarness;
  let shopperA: string;
  let shopperB: string;
  let operator: string;
  let paymentOfA: string;
  let paymentOfB: string;
  beforeAll(async () => {
    h = await createApiTestHarness('api_operator_role', { operatorCode: OPERATOR_CODE });
    shopperA = await demoSession(h, undefined);
    shopperB = await demoSession(h, 'shopper');
    operator = await demoSession(h, 'operator');
    const pay = (cookie: string) =>
      h
        .caller({ cookie, 'idempotency-key': randomUUID() })
        .api.checkout.pay({ lines: [{ productId: 'book_sre', quantity: 1 }] });
    paymentOfA = (await pay(shopperA)).paymentId;
    paymentOfB = (await pay(shopperB)).paymentId;
  });
  afterAll(async () => {
    await h.drop();
  });

  it('checks every ops procedure (the list is read from the router)', () => {
    expect(opsProcedures.sort()).toEqual([
      'capturePayment',
      'evictIdempotencyKey',
      'idempotencyKey',
      'idempotencyKeys',
      'ledger',
      'outbox',
      'paymentMoney',
      'paymentTimeline',
      'payments',
      'refundPayment',
      'releaseIdempotencyKey',
      'resendWebhook',
      'stuckPayments',
      'voidPayment',
      'webhookDeliveries',
    ]);
  });

  it.each(opsProcedures)('ops.%s refuses a shopper session with FORBIDDEN', async (name) => {
    for (const cookie of [shopperA, shopperB]) {
      // With a key, so the guarded mutations are refused for the role, not for a missing key.
      const api = h.caller({ cookie, 'idempotency-key': randomUUID() }).api;
      expect(await refusal(callOps(api, name, paymentOfA))).toEqual({
        trpc: 'FORBIDDEN',
        code: 'operator_required',
      });
    }
  });

  it.each(opsProcedures)(
    'ops.%s answers an operator session and the merchant API key',
    async (name) => {
      for (const headers of [{ cookie: operator }, bearer('tenant_a')]) {
        const api = h.caller({ ...headers, 'idempotency-key': randomUUID() }).api;
        await expect(callOps(api, name, paymentOfA)).resolves.toBeDefined();
      }
    },
  );

  it('an operator sees every shopper’s payments in ops.payments', async () => {
    const rows = await h.caller({ cookie: operator }).api.ops.payments({ limit: 50 });
    expect(rows.map((p) => p.paymentId)).toEqual(expect.arrayContaining([paymentOfA, paymentOfB]));
  });

  it('checkout.status: a shopper reads its own payment, never another shopper’s', async () => {
    const a = h.caller({ cookie: shopperA }).api;
    const b = h.caller({ cookie: shopperB }).api;
    expect((await a.checkout.status({ paymentId: paymentOfA })).paymentId).toBe(paymentOfA);
    expect((await b.checkout.status({ paymentId: paymentOfB })).paymentId).toBe(paymentOfB);
    // Same answer as an id that does not exist: the id leaks nothing.
    expect(await refusal(a.checkout.status({ paymentId: paymentOfB }))).toEqual({
      trpc: 'NOT_FOUND',
      code: 'payment_not_found',
    });
    expect(await refusal(b.checkout.status({ paymentId: paymentOfA }))).toMatchObject({
      code: 'payment_not_found',
    });
    // A new session of the same browser is another principal: it cannot read them either.
    const later = h.caller({ cookie: await demoSession(h, 'shopper') }).api;
    expect(await refusal(later.checkout.status({ paymentId: paymentOfA }))).toMatchObject({
      code: 'payment_not_found',
    });
    // The merchant (operator session, API key) reads any payment of its tenant.
    for (const headers of [{ cookie: operator }, bearer('tenant_a')]) {
      const api = h.caller(headers).api;
      expect((await api.checkout.status({ paymentId: paymentOfA })).paymentId).toBe(paymentOfA);
    }
  });

  it('session.current says who is signed in, and null when nobody is', async () => {
    expect(await h.caller().api.session.current()).toBeNull();
    expect(await h.caller({ cookie: shopperA }).api.session.current()).toMatchObject({
      tenantId: 'tenant_a',
      role: 'shopper',
    });
    expect(await h.caller({ cookie: operator }).api.session.current()).toMatchObject({
      role: 'operator',
    });
  });

  it('without demo login, the operator role comes only from the merchant API key', async () => {
    const closed = await createApiTestHarness('api_operator_role_closed', {
      allowDemoLogin: false,
      operatorCode: OPERATOR_CODE,
    });
    try {
      const start = closed.caller();
      expect(
        await refusal(
          start.api.session.start({
            demoTenantId: 'tenant_a',
            role: 'operator',
            operatorCode: OPERATOR_CODE,
          }),
        ),
      ).toMatchObject({ code: 'demo_login_disabled' });
      const viaKey = closed.caller();
      expect(await viaKey.api.session.start({ apiKey: 'once_test_tenant_a' })).toMatchObject({
        role: 'operator',
      });
    } finally {
      await closed.drop();
    }
  });
});
