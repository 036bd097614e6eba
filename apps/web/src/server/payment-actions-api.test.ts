import { randomUUID } from 'node:crypto';
import type { TestDatabase } from '@once/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServedHandler } from './testing/serve-fetch.ts';
import { startWebTestServer, type WebTestServer } from './testing/web-test-server.ts';

// The merchant's capture, cancel and refunds over real HTTP, as the REST API writes them: the
// action (or refund) and its outbox job first, under the caller's Idempotency-Key. The worker's
// side (the processor's answer) is played here by moving the rows as the worker records them;
// apps/worker's tests run it against the real processor.
describe('REST capture, cancel and refunds', () => {
  let database: TestDatabase;
  let server: ServedHandler;
  let web: WebTestServer | undefined;
  const auth = { authorization: 'Bearer once_test_tenant_a' };
  const otherTenant = { authorization: 'Bearer once_test_tenant_b' };
  const cart = { lines: [{ productId: 'book_sre', quantity: 1 }] };

  beforeAll(async () => {
    web = await startWebTestServer('web_payment_actions', {
      SESSION_SECRET: 'payment-actions-test-secret-0123',
      ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '0',
    });
    ({ database, server } = web);
  });
  afterAll(async () => {
    await web?.close();
  });

  const sql = () => database.client.sql;
  const send = (
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ): Promise<Response> =>
    fetch(`${server.url}${path}`, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const post = (path: string, key: string | undefined, body?: unknown, who = auth) =>
    send('POST', path, key === undefined ? who : { ...who, 'idempotency-key': key }, body);
  const get = async (path: string, who = auth) => {
    const response = await send('GET', path, who);
    return { status: response.status, body: await response.json() };
  };

  /** A checkout over REST, moved to `status` as the worker records the processor's answer. */
  async function payment(
    status: 'processing' | 'authorized' | 'succeeded',
    captureMethod: 'automatic' | 'manual' = status === 'authorized' ? 'manual' : 'automatic',
  ): Promise<{ paymentId: string; amount: number }> {
    const created = await post('/api/v1/payments', randomUUID(), { ...cart, captureMethod });
    expect(created.status).toBe(201);
    const { paymentId, amount } = await created.json();
    await sql()`
      update payments set status = ${status}, processor_payment_intent_id = 'pi_test'
      where id = ${paymentId}`;
    return { paymentId, amount };
  }

  /** Everything a money request may write for a payment: what a refusal must leave as it was. */
  const written = async (paymentId: string) => ({
    payment: (await sql()`select status from payments where id = ${paymentId}`)[0],
    actions: await sql()`
      select kind, status, amount from payment_actions where payment_id = ${paymentId} order by created_at`,
    refunds: await sql()`
      select amount, status, reason from refunds where payment_id = ${paymentId} order by created_at`,
    jobs: await sql()`
      select kind, downstream_key from outbox_jobs
      where payment_id = ${paymentId} and kind <> 'charge_payment' order by created_at`,
  });

  const problem = async (response: Response) => {
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    return { status: response.status, body: await response.json() };
  };

  /**
   * Concurrent requests with one key: one first answer; every other is its replay, or 409
   * `idempotency_key_in_use` while it runs (never a refusal the first one's effect would cause).
   */
  const expectOneActed = async (responses: Response[]) => {
    expect(
      responses.filter((r) => r.status === 202 && r.headers.get('idempotent-replayed') !== 'true'),
    ).toHaveLength(1);
    for (const response of responses.filter((r) => r.status !== 202)) {
      expect((await problem(response)).body).toMatchObject({ code: 'idempotency_key_in_use' });
    }
  };

  describe('POST /api/v1/payments with captureMethod, and the payment as the merchant reads it', () => {
    it('a manual payment reads requires_capture once authorised, with what a capture may take', async () => {
      const key = randomUUID();
      const created = await post('/api/v1/payments', key, { ...cart, captureMethod: 'manual' });
      expect(created.status).toBe(201);
      const body = await created.json();
      expect(body).toMatchObject({ status: 'processing', captureMethod: 'manual' });
      const [row] = await sql()`select capture_method from payments where id = ${body.paymentId}`;
      expect(row?.capture_method).toBe('manual');
      // The same key with the automatic default is another request.
      const reused = await post('/api/v1/payments', key, cart);
      expect((await problem(reused)).body).toMatchObject({ code: 'idempotency_key_reused' });

      await sql()`update payments set status = 'authorized' where id = ${body.paymentId}`;
      expect((await get(`/api/v1/payments/${body.paymentId}`)).body).toMatchObject({
        status: 'requires_capture',
        terminal: false,
        captureMethod: 'manual',
        amountCapturable: body.amount,
        amountReceived: 0,
        amountRefunded: 0,
        nextAction: null,
      });
    });

    it('maps every internal state to Stripe’s words, and shows 3-D Secure’s next action', async () => {
      const { paymentId, amount } = await payment('processing');
      const read = async () => (await get(`/api/v1/payments/${paymentId}`)).body;
      expect(await read()).toMatchObject({ status: 'processing', captureMethod: 'automatic' });
      await sql()`
        update payments set status = 'requires_action',
          next_action_url = 'http://processor.test/3ds/pi_test' where id = ${paymentId}`;
      expect(await read()).toMatchObject({
        status: 'requires_action',
        nextAction: { type: 'redirect_to_url', url: 'http://processor.test/3ds/pi_test' },
      });
      await sql()`
        update payments set status = 'canceled', next_action_url = null where id = ${paymentId}`;
      expect(await read()).toMatchObject({ status: 'canceled', terminal: true, nextAction: null });
      await sql()`update payments set status = 'captured', amount_captured = 700 where id = ${paymentId}`;
      expect(await read()).toMatchObject({ status: 'succeeded', amountReceived: 700 });
      await sql()`update payments set status = 'voided', amount_captured = null where id = ${paymentId}`;
      expect(await read()).toMatchObject({ status: 'canceled', amountReceived: 0 });
      await sql()`update payments set status = 'succeeded' where id = ${paymentId}`;
      expect(await read()).toMatchObject({
        status: 'succeeded',
        amountCapturable: 0,
        amountReceived: amount,
      });
    });
  });

  describe('POST /api/v1/payments/{id}/capture', () => {
    it('202 with the payment processing, one action and one job; the same key replays it', async () => {
      const { paymentId } = await payment('authorized');
      const path = `/api/v1/payments/${paymentId}/capture`;
      const key = randomUUID();
      const first = await post(path, key, { amount: 1000 });
      expect(first.status).toBe(202);
      expect(first.headers.get('location')).toBe(`/api/v1/payments/${paymentId}`);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      const body = await first.json();
      expect(body).toMatchObject({ paymentId, status: 'processing', amountCapturable: 0 });

      const again = await post(path, key, { amount: 1000 });
      expect(again.status).toBe(202);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await again.json()).toEqual(body);
      const after = await written(paymentId);
      expect(after.actions).toEqual([{ kind: 'capture', status: 'pending', amount: 1000 }]);
      expect(after.jobs).toHaveLength(1);
      expect(after.jobs[0]).toMatchObject({ kind: 'capture_payment' });

      // The worker records the processor's capture: the payment reads succeeded.
      await sql()`
        update payments set status = 'captured', amount_captured = 1000 where id = ${paymentId}`;
      await sql()`update payment_actions set status = 'succeeded' where payment_id = ${paymentId}`;
      expect((await get(`/api/v1/payments/${paymentId}`)).body).toMatchObject({
        status: 'succeeded',
        amountCapturable: 0,
        amountReceived: 1000,
      });
    });

    it('with no body captures everything', async () => {
      const { paymentId } = await payment('authorized');
      const response = await post(`/api/v1/payments/${paymentId}/capture`, randomUUID());
      expect(response.status).toBe(202);
      expect((await written(paymentId)).actions).toEqual([
        { kind: 'capture', status: 'pending', amount: null },
      ]);
    });

    it('the same key with another amount or on another payment is 422 and changes nothing', async () => {
      const { paymentId } = await payment('authorized');
      const other = await payment('authorized');
      const key = randomUUID();
      expect(
        (await post(`/api/v1/payments/${paymentId}/capture`, key, { amount: 500 })).status,
      ).toBe(202);
      const before = await written(paymentId);
      const otherAmount = await post(`/api/v1/payments/${paymentId}/capture`, key, { amount: 600 });
      expect(await problem(otherAmount)).toMatchObject({
        status: 422,
        body: { code: 'idempotency_key_reused' },
      });
      const otherPayment = await post(`/api/v1/payments/${other.paymentId}/capture`, key, {
        amount: 500,
      });
      expect((await problem(otherPayment)).body).toMatchObject({ code: 'idempotency_key_reused' });
      expect(await written(paymentId)).toEqual(before);
      expect((await written(other.paymentId)).actions).toEqual([]);
    });

    it('20 concurrent requests with one key capture once: one first answer, the rest replays', async () => {
      const { paymentId } = await payment('authorized');
      const key = randomUUID();
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => post(`/api/v1/payments/${paymentId}/capture`, key)),
      );
      await expectOneActed(responses);
      const after = await written(paymentId);
      expect(after.actions).toHaveLength(1);
      expect(after.jobs).toHaveLength(1);
    });

    it('a double click with two keys captures once: the second is 409 payment_not_authorized', async () => {
      const { paymentId } = await payment('authorized');
      const responses = await Promise.all(
        Array.from({ length: 5 }, () =>
          post(`/api/v1/payments/${paymentId}/capture`, randomUUID()),
        ),
      );
      expect(responses.filter((r) => r.status === 202)).toHaveLength(1);
      for (const refused of responses.filter((r) => r.status !== 202)) {
        expect(await problem(refused)).toMatchObject({
          status: 409,
          body: {
            code: 'payment_not_authorized',
            type: 'https://once.dev/problems/payment_not_authorized',
          },
        });
      }
      expect((await written(paymentId)).actions).toHaveLength(1);
    });

    it('refusals are stable problem+json and change nothing', async () => {
      const captured = await payment('authorized');
      expect(
        (await post(`/api/v1/payments/${captured.paymentId}/capture`, randomUUID())).status,
      ).toBe(202);
      const notAuthorized = await payment('processing', 'manual');
      const authorized = await payment('authorized');
      const cases: [string, { paymentId: string }, unknown, number, string, typeof auth?][] = [
        ['capturing twice', captured, undefined, 409, 'payment_not_authorized'],
        [
          'capturing a payment not authorised',
          notAuthorized,
          undefined,
          409,
          'payment_not_authorized',
        ],
        [
          'capturing more than authorised',
          authorized,
          { amount: 1_000_000 },
          400,
          'capture_amount_too_large',
        ],
        ['a zero amount', authorized, { amount: 0 }, 400, 'invalid_input'],
        ['an unknown payment', { paymentId: 'pay_missing' }, undefined, 404, 'payment_not_found'],
        ['another tenant’s payment', authorized, undefined, 404, 'payment_not_found', otherTenant],
      ];
      for (const [what, { paymentId }, body, status, code, who] of cases) {
        const before = await written(paymentId);
        const response = await post(
          `/api/v1/payments/${paymentId}/capture`,
          randomUUID(),
          body,
          who,
        );
        expect(await problem(response), what).toMatchObject({
          status,
          body: { status, code, type: `https://once.dev/problems/${code}` },
        });
        expect(await written(paymentId), what).toEqual(before);
      }
      const missingKey = await post(`/api/v1/payments/${authorized.paymentId}/capture`, undefined);
      expect((await problem(missingKey)).body).toMatchObject({ code: 'idempotency_key_missing' });
      const anonymous = await send('POST', `/api/v1/payments/${authorized.paymentId}/capture`, {
        'idempotency-key': randomUUID(),
      });
      expect((await problem(anonymous)).body).toMatchObject({ code: 'unauthenticated' });
      expect((await written(authorized.paymentId)).actions).toEqual([]);
    });

    it('a refused capture releases the key: the corrected request runs under it', async () => {
      const { paymentId, amount } = await payment('authorized');
      const key = randomUUID();
      const tooMuch = await post(`/api/v1/payments/${paymentId}/capture`, key, {
        amount: amount + 1,
      });
      expect(tooMuch.status).toBe(400);
      // Another body under the refused key: a first run, not "key reused".
      const fixed = await post(`/api/v1/payments/${paymentId}/capture`, key, { amount });
      expect(fixed.status).toBe(202);
      expect(fixed.headers.get('idempotent-replayed')).toBeNull();
    });
  });

  describe('POST /api/v1/payments/{id}/cancel', () => {
    it('202 with the payment processing, one void; replayed; it reads canceled once voided', async () => {
      const { paymentId } = await payment('authorized');
      const key = randomUUID();
      const first = await post(`/api/v1/payments/${paymentId}/cancel`, key);
      expect(first.status).toBe(202);
      const body = await first.json();
      expect(body).toMatchObject({ paymentId, status: 'processing' });
      const again = await post(`/api/v1/payments/${paymentId}/cancel`, key);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await again.json()).toEqual(body);
      const after = await written(paymentId);
      expect(after.actions).toEqual([{ kind: 'void', status: 'pending', amount: null }]);
      expect(after.jobs).toMatchObject([{ kind: 'void_payment' }]);
      await sql()`update payments set status = 'voided' where id = ${paymentId}`;
      await sql()`update payment_actions set status = 'succeeded' where payment_id = ${paymentId}`;
      expect((await get(`/api/v1/payments/${paymentId}`)).body).toMatchObject({
        status: 'canceled',
        terminal: true,
        amountCapturable: 0,
        amountReceived: 0,
      });
    });

    it('cancelling a captured or unauthorised payment is 409 and changes nothing', async () => {
      const captured = await payment('authorized');
      await post(`/api/v1/payments/${captured.paymentId}/capture`, randomUUID());
      const succeeded = await payment('succeeded');
      for (const { paymentId } of [captured, succeeded]) {
        const before = await written(paymentId);
        const response = await post(`/api/v1/payments/${paymentId}/cancel`, randomUUID());
        expect((await problem(response)).body).toMatchObject({ code: 'payment_not_authorized' });
        expect(await written(paymentId)).toEqual(before);
      }
      const foreign = await post(
        `/api/v1/payments/${succeeded.paymentId}/cancel`,
        randomUUID(),
        undefined,
        otherTenant,
      );
      expect(await problem(foreign)).toMatchObject({
        status: 404,
        body: { code: 'payment_not_found' },
      });
    });
  });

  describe('POST and GET /api/v1/payments/{id}/refunds', () => {
    it('202 with the refund pending, one refund and one job; replayed; listed; counted', async () => {
      const { paymentId, amount } = await payment('succeeded');
      const path = `/api/v1/payments/${paymentId}/refunds`;
      const key = randomUUID();
      const first = await post(path, key, { amount: 300, reason: 'requested_by_customer' });
      expect(first.status).toBe(202);
      expect(first.headers.get('location')).toBe(`/api/v1/payments/${paymentId}/refunds`);
      const refund = await first.json();
      expect(refund).toEqual({
        refundId: expect.stringMatching(/^.+$/),
        paymentId,
        amount: 300,
        status: 'pending',
        reason: 'requested_by_customer',
        failureCode: null,
        createdAt: expect.any(String),
      });
      const again = await post(path, key, { reason: 'requested_by_customer', amount: 300 });
      expect(again.status).toBe(202);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await again.json()).toEqual(refund);
      const after = await written(paymentId);
      expect(after.refunds).toEqual([
        { amount: 300, status: 'requested', reason: 'requested_by_customer' },
      ]);
      expect(after.jobs).toMatchObject([{ kind: 'refund_payment' }]);

      // A second refund takes the rest; the processor fails one: the list says so.
      const rest = await post(path, randomUUID());
      expect(await rest.json()).toMatchObject({ amount: amount - 300, status: 'pending' });
      await sql()`
        update refunds set status = 'failed', failure_code = 'expired_or_canceled_card'
        where id = ${refund.refundId}`;
      const listed = await get(path);
      expect(listed.status).toBe(200);
      expect(listed.body).toEqual({
        paymentId,
        refunds: [
          { ...refund, status: 'failed', failureCode: 'expired_or_canceled_card' },
          expect.objectContaining({ amount: amount - 300, status: 'pending' }),
        ],
      });
      expect((await get(`/api/v1/payments/${paymentId}`)).body).toMatchObject({
        amountReceived: amount,
        amountRefunded: amount - 300,
      });
    });

    it('the same key with another amount is 422; 20 concurrent requests with one key refund once', async () => {
      const { paymentId } = await payment('succeeded');
      const path = `/api/v1/payments/${paymentId}/refunds`;
      const key = randomUUID();
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => post(path, key, { amount: 100 })),
      );
      await expectOneActed(responses);
      const reused = await post(path, key, { amount: 200 });
      expect(await problem(reused)).toMatchObject({
        status: 422,
        body: { code: 'idempotency_key_reused' },
      });
      expect((await written(paymentId)).refunds).toEqual([
        { amount: 100, status: 'requested', reason: null },
      ]);
    });

    it('refusals are stable problem+json and change nothing', async () => {
      const succeeded = await payment('succeeded');
      const authorized = await payment('authorized');
      const cases: [string, { paymentId: string }, unknown, number, string, typeof auth?][] = [
        [
          'refunding more than received',
          succeeded,
          { amount: succeeded.amount + 1 },
          400,
          'refund_amount_too_large',
        ],
        ['refunding an uncaptured payment', authorized, undefined, 409, 'payment_not_refundable'],
        ['an unknown reason', succeeded, { reason: 'because' }, 400, 'invalid_input'],
        ['an unknown payment', { paymentId: 'pay_missing' }, undefined, 404, 'payment_not_found'],
        ['another tenant’s payment', succeeded, undefined, 404, 'payment_not_found', otherTenant],
      ];
      for (const [what, { paymentId }, body, status, code, who] of cases) {
        const before = await written(paymentId);
        const response = await post(
          `/api/v1/payments/${paymentId}/refunds`,
          randomUUID(),
          body,
          who,
        );
        expect(await problem(response), what).toMatchObject({
          status,
          body: { status, code, type: `https://once.dev/problems/${code}` },
        });
        expect(await written(paymentId), what).toEqual(before);
      }
      // All of it refunded: nothing is left for another.
      await post(`/api/v1/payments/${succeeded.paymentId}/refunds`, randomUUID());
      const before = await written(succeeded.paymentId);
      const again = await post(`/api/v1/payments/${succeeded.paymentId}/refunds`, randomUUID(), {
        amount: 1,
      });
      expect((await problem(again)).body).toMatchObject({
        code: 'refund_amount_too_large',
        details: { refundable: 0, requested: 1 },
      });
      expect(await written(succeeded.paymentId)).toEqual(before);
    });

    it('GET refunds of an unknown or another tenant’s payment is 404', async () => {
      const { paymentId } = await payment('succeeded');
      expect((await get(`/api/v1/payments/${paymentId}/refunds`)).body).toEqual({
        paymentId,
        refunds: [],
      });
      expect(await get(`/api/v1/payments/${paymentId}/refunds`, otherTenant)).toMatchObject({
        status: 404,
        body: { code: 'payment_not_found' },
      });
      expect(await get('/api/v1/payments/pay_missing/refunds')).toMatchObject({ status: 404 });
    });
  });
});
